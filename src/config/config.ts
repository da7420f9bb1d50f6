import { FILE_MAX_BYTES_DEFAULT } from '@agent-messaging/protocol';

/** FILE_QUOTA_BYTES's default: 1 GiB per agent. */
const FILE_QUOTA_BYTES_DEFAULT = 1024 * 1024 * 1024;
import type { RawEnv } from './env.js';

export type AuthzMode = 'open' | 'strict';
export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

export type DatabaseConfig =
  // ':memory:' for an in-memory database. synchronous: 'normal' (default) survives a process crash,
  // 'full' also a power loss. lockTimeoutMs: how long a write waits for another process's lock.
  | { kind: 'sqlite'; path: string; synchronous?: 'normal' | 'full'; lockTimeoutMs?: number }
  | { kind: 'postgres'; url: string; poolMax: number };

export interface Config {
  port: number;
  host: string;
  database: DatabaseConfig;
  redisUrl: string | null;
  /** Prepended to every Redis key and channel of the service, so deployments can share a Redis. */
  redisKeyPrefix: string;
  /**
   * The Socket.IO Redis adapter's fan-out: `auto` is sharded on Redis >= 7, classic below
   * (docs/scale-out.md, "Fan-out"); the other values force one, the same on every node.
   */
  redisAdapterMode: 'auto' | 'sharded' | 'classic';
  /**
   * With Redis: a node's sockets count as present this long after its last heartbeat (sent every
   * third of it); a node that dies is swept by the others within about 1.33 times this.
   */
  presenceTtlSeconds: number;
  /** Null: generated once and kept in the SQLite database (not allowed with PostgreSQL). */
  jwtSecret: string | null;
  jwtTtlSeconds: number;
  authzMode: AuthzMode;
  rateLimit: { anonPerMinute: number; agentPerMinute: number };
  /** Long-poll waits (inbox, MCP fetch_inbox) one agent may hold at once on a node; more are 429. */
  waitsPerAgent: number;
  ws: {
    eventsPerSecond: number;
    abuseEventsPerSecond: number;
    abuseSeconds: number;
    maxConnectionsPerAgent: number;
    /** Null: any Origin is accepted. Otherwise a browser's Origin must be in the list. */
    allowedOrigins: string[] | null;
    /** Outgoing data a connection may leave unread before it is dropped (slow consumers). */
    maxBufferedBytes: number;
    /**
     * Events of one connection admitted and not yet answered; at the bound the server stops reading
     * the connection until answers go out (pipelined sends, memory bounded).
     */
    maxEventsInFlight: number;
    /** Period of the position check (`room:positions` to every socket, subscriptions repaired); 0: off. */
    positionCheckIntervalMs: number;
  };
  sessionExchangeConcurrency: number;
  /**
   * Browser origins (scheme://host[:port]) allowed to call the REST API from their pages (CORS).
   * Empty: none, and preflights get 404 as any unknown route.
   */
  corsOrigins: string[];
  companyId: string;
  trustProxy: boolean | string | number;
  /**
   * REQUEST_TIMEOUT_SECONDS: how long a request may take to arrive in full, headers and body
   * (docs/protocol.md: 30 s, then 408). Raise it where large uploads come over slow links.
   */
  requestTimeoutMs: number;
  /** STREAM_IDLE_SECONDS: an open streamed message with no append (or a WebSocket-started one whose sender has no socket) this long is ended `interrupted`. */
  streamIdleSeconds: number;
  logLevel: LogLevel;
  files: {
    /** FILE_MAX_BYTES: the largest upload (docs/files.md). */
    maxBytes: number;
    /** FILE_QUOTA_BYTES: the bytes one agent's files may take in all (docs/files.md). */
    quotaBytes: number;
    /**
     * The clean-up of files (docs/files.md): its period, the age at which a file attached to no
     * message is deleted, and the age at which an upload still incomplete is. Not from the
     * environment: tests shorten them through the configuration object.
     */
    cleanupIntervalMs: number;
    unattachedMaxAgeMs: number;
    incompleteMaxAgeMs: number;
  };
  /**
   * PUBLIC_URL: the origin clients use (docs/oauth.md): the OAuth issuer, and `<publicUrl>/mcp` the
   * protected resource. Null: `http://<HOST>:<PORT>` as the server listens (app.ts).
   */
  publicUrl: string | null;
  /** OAUTH_ACCESS_TOKEN_TTL_SECONDS: an OAuth access token's lifetime. */
  oauthAccessTokenTtlSeconds: number;
  webhooks: {
    /** Seconds to wait after the n-th failed attempt before the next; its length + 1 attempts in all. */
    retryScheduleSeconds: number[];
    /** Whether endpoints may target loopback, private, link-local or unspecified addresses (tests, closed networks). */
    allowPrivateTargets: boolean;
  };
  retention: {
    /**
     * RETENTION_DAYS: how long messages are kept in a room without its own `retentionDays`, in days
     * (a decimal: 0.0001 is about 9 s); null (unset): for ever (docs/retention.md).
     */
    defaultDays: number | null;
    /** RETENTION_SWEEP_SECONDS: the period of the sweep that deletes expired messages. */
    sweepIntervalMs: number;
  };
  /**
   * TEST ONLY (AMS_TEST_PAUSE_TASK_MOVE=true; absent otherwise): every task move's transaction stops,
   * open, between its message's writes and the move's own, and stays there until the process is
   * killed. The crash test of docs/tasks.md ("A move is one commit") kills it there.
   */
  testPauseTaskMove?: true;
  /**
   * TEST ONLY (AMS_TEST_MIN_LEASE_SECONDS=1..10; absent otherwise): the shortest task claim lease
   * accepted (10 otherwise) and the shortest resource lease ttl (5 otherwise), so that the tests of
   * leases running out take seconds (docs/tasks.md, docs/leases.md).
   */
  testMinLeaseSeconds?: number;
}

/** A configuration mistake; main prints its message as one line and exits. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

const LOG_LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

function integer(name: string, raw: string | undefined, fallback: number, min: number, max: number): number {
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(`${name} must be a whole number, got "${raw}"`);
  const value = Number(raw.trim());
  if (value < min || value > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${value}`);
  return value;
}

function parseDatabase(raw: string | undefined, poolMax: number, env: RawEnv): DatabaseConfig {
  const url = raw ?? 'sqlite:./data/ams.sqlite';
  if (url.startsWith('sqlite:')) {
    const path = url.slice('sqlite:'.length);
    if (path === '') throw new ConfigError('DATABASE_URL sqlite: needs a path, e.g. sqlite:./data/ams.sqlite or sqlite::memory:');
    const synchronous = (env.SQLITE_SYNCHRONOUS ?? 'normal').toLowerCase();
    if (synchronous !== 'normal' && synchronous !== 'full') {
      throw new ConfigError(`SQLITE_SYNCHRONOUS must be "normal" or "full", got "${env.SQLITE_SYNCHRONOUS}"`);
    }
    const lockTimeoutMs = integer('SQLITE_LOCK_TIMEOUT_MS', env.SQLITE_LOCK_TIMEOUT_MS, 2000, 0, 60_000);
    return { kind: 'sqlite', path, synchronous, lockTimeoutMs };
  }
  if (url.startsWith('postgres://') || url.startsWith('postgresql://')) {
    try {
      new URL(url);
    } catch {
      throw new ConfigError('DATABASE_URL is not a valid postgres:// URL');
    }
    return { kind: 'postgres', url, poolMax };
  }
  throw new ConfigError('DATABASE_URL must start with sqlite: or postgres://');
}

export const DEFAULT_WEBHOOK_RETRY_SCHEDULE = [5, 300, 1800, 7200, 18000, 36000];
const WEBHOOK_RETRIES_MAX = 20;
const WEBHOOK_RETRY_DELAY_MAX_SECONDS = 7 * 24 * 3600;

/**
 * WEBHOOK_RETRY_SCHEDULE: seconds, comma separated. Unset (or empty, as every variable) is the
 * default; `none` means a single attempt and no retry.
 */
function parseRetrySchedule(raw: string | undefined): number[] {
  if (raw === undefined) return DEFAULT_WEBHOOK_RETRY_SCHEDULE;
  if (raw.trim().toLowerCase() === 'none') return [];
  const items = raw.split(',').map((s) => s.trim());
  if (items.length > WEBHOOK_RETRIES_MAX || items.some((s) => !/^\d+$/.test(s) || Number(s) > WEBHOOK_RETRY_DELAY_MAX_SECONDS)) {
    throw new ConfigError(`WEBHOOK_RETRY_SCHEDULE must be "none" or up to ${WEBHOOK_RETRIES_MAX} comma-separated whole numbers of seconds (each at most ${WEBHOOK_RETRY_DELAY_MAX_SECONDS}), got "${raw}"`);
  }
  return items.map(Number);
}

/** The longest retention a room or the service may set: 100 years. */
export const RETENTION_DAYS_MAX = 36_500;

/** RETENTION_DAYS: a decimal number of days above 0 (unset: keep everything). */
function parseRetentionDays(raw: string | undefined): number | null {
  if (raw === undefined) return null;
  const text = raw.trim();
  const value = /^\d+(\.\d+)?$|^\.\d+$/.test(text) ? Number(text) : NaN;
  if (!(value > 0) || value > RETENTION_DAYS_MAX) {
    throw new ConfigError(`RETENTION_DAYS must be a number of days above 0 and at most ${RETENTION_DAYS_MAX} (a decimal, e.g. 30 or 0.5), got "${raw}"`);
  }
  return value;
}

function parseBoolean(name: string, raw: string | undefined): boolean {
  if (raw === undefined || raw === 'false') return false;
  if (raw === 'true') return true;
  throw new ConfigError(`${name} must be "true" or "false", got "${raw}"`);
}

function parseTestMinLeaseSeconds(raw: string): number {
  if (!/^\d{1,2}$/.test(raw) || Number(raw) < 1 || Number(raw) > 10) throw new ConfigError(`AMS_TEST_MIN_LEASE_SECONDS must be a whole number from 1 to 10, got "${raw}"`);
  return Number(raw);
}

function parseTrustProxy(raw: string | undefined): boolean | string | number {
  if (raw === undefined || raw === 'false') return false;
  if (raw === 'true') return true;
  if (/^\d+$/.test(raw)) return Number(raw); // number of hops
  return raw; // addresses / CIDRs, comma separated
}

/** The origin as browsers send it (lower-case host, no default port), or null if `item` is not just an origin. */
function originOf(item: string): string | null {
  let url: URL;
  try {
    url = new URL(item);
  } catch {
    return null;
  }
  // scheme://host[:port] and nothing more: no path, query, fragment or user info.
  const bare = url.pathname === '/' && !/[?#]/.test(item) && url.username === '' && url.password === '';
  return bare && (url.protocol === 'http:' || url.protocol === 'https:') ? url.origin : null;
}

/**
 * CORS_ORIGINS: a comma-separated list of exact origins. `*` is refused: in open mode any web page
 * could then drive the service through its visitors' browsers (creating admins included). No
 * credentials mode is needed: the API authenticates with the Authorization header, not cookies.
 */
function parseCorsOrigins(raw: string | undefined): string[] {
  if (raw === undefined) return [];
  const origins: string[] = [];
  for (const item of raw.split(',').map((o) => o.trim()).filter((o) => o !== '')) {
    if (item === '*') throw new ConfigError('CORS_ORIGINS must list origins one by one; "*" is not accepted');
    const origin = originOf(item);
    if (origin === null) {
      throw new ConfigError(`CORS_ORIGINS entries must be origins like https://app.example.com or http://localhost:5173, got "${item}"`);
    }
    if (!origins.includes(origin)) origins.push(origin);
  }
  return origins;
}

const isLoopbackHost = (host: string): boolean =>
  host === 'localhost' || host === '::1' || host === '[::1]' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);

/**
 * One warning line when open mode listens beyond this machine: without authentication on the
 * administrative routes, anyone who reaches the port can create agents, admins included.
 */
export function exposureWarning(config: Pick<Config, 'host' | 'port' | 'authzMode'>): string | null {
  if (config.authzMode !== 'open' || isLoopbackHost(config.host)) return null;
  return `AUTHZ_MODE=open on HOST=${config.host}: anyone who can reach port ${config.port} can create agents (admins included), ` +
    'issue their API tokens and read their rooms without credentials; set AUTHZ_MODE=strict or HOST=127.0.0.1';
}

export interface BuildOptions {
  /**
   * False for tools that never sign or verify a JWT (the `ams` command line): they may run against
   * PostgreSQL without JWT_SECRET. The server always requires it there.
   */
  requireJwtSecret?: boolean;
}

/** PUBLIC_URL: an http(s) URL without query, fragment or user info; kept without a trailing slash. */
function parsePublicUrl(value: string | undefined): string | null {
  if (value === undefined || value.trim() === '') return null;
  let url: URL;
  try {
    url = new URL(value.trim());
  } catch {
    throw new ConfigError(`PUBLIC_URL must be a URL like https://ams.example.com, got "${value}"`);
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.search !== '' || url.hash !== '' || url.username !== '' || url.password !== '') {
    throw new ConfigError(`PUBLIC_URL must be an http or https URL without query, fragment or user info, got "${value}"`);
  }
  return `${url.origin}${url.pathname}`.replace(/\/+$/, '');
}

export function buildConfig(env: RawEnv, options: BuildOptions = {}): Config {
  const poolMax = integer('DB_POOL_MAX', env.DB_POOL_MAX, 10, 1, 1000);
  const database = parseDatabase(env.DATABASE_URL, poolMax, env);

  const jwtSecret = env.JWT_SECRET ?? null;
  if (jwtSecret !== null && Buffer.byteLength(jwtSecret, 'utf8') < 32) {
    throw new ConfigError('JWT_SECRET must be at least 32 bytes');
  }
  if (jwtSecret === null && database.kind === 'postgres' && options.requireJwtSecret !== false) {
    throw new ConfigError('JWT_SECRET is required with PostgreSQL (every node must sign with the same secret)');
  }

  const authzMode = env.AUTHZ_MODE ?? 'open';
  if (authzMode !== 'open' && authzMode !== 'strict') {
    throw new ConfigError(`AUTHZ_MODE must be "open" or "strict", got "${authzMode}"`);
  }

  const logLevel = env.LOG_LEVEL ?? 'info';
  if (!LOG_LEVELS.includes(logLevel as LogLevel)) {
    throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);
  }

  const redisUrl = env.REDIS_URL ?? null;
  if (redisUrl !== null && !/^rediss?:\/\//.test(redisUrl)) {
    throw new ConfigError('REDIS_URL must start with redis:// or rediss://');
  }

  const redisKeyPrefix = env.REDIS_KEY_PREFIX ?? 'ams:';
  if (!/^[A-Za-z0-9:._{}-]{1,64}$/.test(redisKeyPrefix)) {
    throw new ConfigError('REDIS_KEY_PREFIX must be 1 to 64 characters of letters, digits, ":", ".", "_", "-", "{" or "}"');
  }

  const redisAdapterMode = env.REDIS_ADAPTER_MODE ?? 'auto';
  if (redisAdapterMode !== 'auto' && redisAdapterMode !== 'sharded' && redisAdapterMode !== 'classic') {
    throw new ConfigError(`REDIS_ADAPTER_MODE must be auto, sharded or classic, got "${redisAdapterMode}"`);
  }

  const companyId = env.COMPANY_ID ?? 'default';
  if (!/^[A-Za-z0-9._-]{1,128}$/.test(companyId)) {
    throw new ConfigError('COMPANY_ID must be 1 to 128 characters of letters, digits, ".", "_" or "-"');
  }

  const origins = env.WS_ALLOWED_ORIGINS;
  const allowedOrigins = origins === undefined || origins.trim() === '*'
    ? null
    : origins.split(',').map((o) => o.trim()).filter((o) => o !== '');

  return {
    port: integer('PORT', env.PORT, 3000, 0, 65535),
    // Loopback unless told otherwise: open mode on all interfaces exposes the admin routes.
    host: env.HOST ?? '127.0.0.1',
    database,
    redisUrl,
    redisKeyPrefix,
    redisAdapterMode,
    presenceTtlSeconds: integer('PRESENCE_TTL_SECONDS', env.PRESENCE_TTL_SECONDS, 15, 2, 3600),
    jwtSecret,
    jwtTtlSeconds: integer('JWT_TTL_SECONDS', env.JWT_TTL_SECONDS, 900, 1, 31 * 24 * 3600),
    authzMode,
    rateLimit: {
      anonPerMinute: integer('RATE_LIMIT_ANON_PER_MINUTE', env.RATE_LIMIT_ANON_PER_MINUTE, 100, 1, 10_000_000),
      agentPerMinute: integer('RATE_LIMIT_AGENT_PER_MINUTE', env.RATE_LIMIT_AGENT_PER_MINUTE, 600, 1, 10_000_000),
    },
    waitsPerAgent: integer('WAITS_PER_AGENT', env.WAITS_PER_AGENT, 10, 1, 100_000),
    ws: {
      eventsPerSecond: integer('WS_EVENTS_PER_SECOND', env.WS_EVENTS_PER_SECOND, 30, 1, 1_000_000),
      abuseEventsPerSecond: integer('WS_ABUSE_EVENTS_PER_SECOND', env.WS_ABUSE_EVENTS_PER_SECOND, 50, 1, 1_000_000),
      abuseSeconds: integer('WS_ABUSE_SECONDS', env.WS_ABUSE_SECONDS, 10, 1, 3600),
      maxConnectionsPerAgent: integer('WS_MAX_CONNECTIONS_PER_AGENT', env.WS_MAX_CONNECTIONS_PER_AGENT, 20, 1, 100_000),
      allowedOrigins,
      maxBufferedBytes: integer('WS_MAX_BUFFERED_BYTES', env.WS_MAX_BUFFERED_BYTES, 8 * 1024 * 1024, 64 * 1024, 1024 * 1024 * 1024),
      maxEventsInFlight: integer('WS_MAX_EVENTS_IN_FLIGHT', env.WS_MAX_EVENTS_IN_FLIGHT, 256, 1, 100_000),
      positionCheckIntervalMs: integer('POSITION_CHECK_INTERVAL_MS', env.POSITION_CHECK_INTERVAL_MS, 30_000, 0, 3_600_000),
    },
    sessionExchangeConcurrency: integer('SESSION_EXCHANGE_CONCURRENCY', env.SESSION_EXCHANGE_CONCURRENCY, 64, 1, 10_000),
    corsOrigins: parseCorsOrigins(env.CORS_ORIGINS),
    companyId,
    trustProxy: parseTrustProxy(env.TRUST_PROXY),
    streamIdleSeconds: integer('STREAM_IDLE_SECONDS', env.STREAM_IDLE_SECONDS, 30, 1, 3600),
    requestTimeoutMs: 1000 * integer('REQUEST_TIMEOUT_SECONDS', env.REQUEST_TIMEOUT_SECONDS, 30, 1, 3600),
    logLevel: logLevel as LogLevel,
    files: {
      maxBytes: integer('FILE_MAX_BYTES', env.FILE_MAX_BYTES, FILE_MAX_BYTES_DEFAULT, 1, 1024 * 1024 * 1024),
      quotaBytes: integer('FILE_QUOTA_BYTES', env.FILE_QUOTA_BYTES, FILE_QUOTA_BYTES_DEFAULT, 1, Number.MAX_SAFE_INTEGER),
      cleanupIntervalMs: 10 * 60_000,
      unattachedMaxAgeMs: 24 * 3600_000,
      incompleteMaxAgeMs: 3600_000,
    },
    publicUrl: parsePublicUrl(env.PUBLIC_URL),
    oauthAccessTokenTtlSeconds: integer('OAUTH_ACCESS_TOKEN_TTL_SECONDS', env.OAUTH_ACCESS_TOKEN_TTL_SECONDS, 3600, 60, 86_400),
    webhooks: {
      retryScheduleSeconds: parseRetrySchedule(env.WEBHOOK_RETRY_SCHEDULE),
      allowPrivateTargets: parseBoolean('WEBHOOK_ALLOW_PRIVATE_TARGETS', env.WEBHOOK_ALLOW_PRIVATE_TARGETS),
    },
    retention: {
      defaultDays: parseRetentionDays(env.RETENTION_DAYS),
      sweepIntervalMs: 1000 * integer('RETENTION_SWEEP_SECONDS', env.RETENTION_SWEEP_SECONDS, 3600, 1, 7 * 24 * 3600),
    },
    ...(parseBoolean('AMS_TEST_PAUSE_TASK_MOVE', env.AMS_TEST_PAUSE_TASK_MOVE) ? { testPauseTaskMove: true as const } : {}),
    ...(env.AMS_TEST_MIN_LEASE_SECONDS === undefined ? {} : { testMinLeaseSeconds: parseTestMinLeaseSeconds(env.AMS_TEST_MIN_LEASE_SECONDS) }),
  };
}
