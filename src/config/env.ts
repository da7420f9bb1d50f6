/**
 * The only module that reads process.env. It returns raw strings; config.ts turns them into a
 * typed, validated configuration.
 */
export interface RawEnv {
  PORT?: string;
  HOST?: string;
  DATABASE_URL?: string;
  REDIS_URL?: string;
  REDIS_KEY_PREFIX?: string;
  REDIS_ADAPTER_MODE?: string;
  JWT_SECRET?: string;
  JWT_TTL_SECONDS?: string;
  AUTHZ_MODE?: string;
  RATE_LIMIT_ANON_PER_MINUTE?: string;
  RATE_LIMIT_AGENT_PER_MINUTE?: string;
  WAITS_PER_AGENT?: string;
  WS_EVENTS_PER_SECOND?: string;
  WS_ABUSE_EVENTS_PER_SECOND?: string;
  WS_ABUSE_SECONDS?: string;
  WS_MAX_CONNECTIONS_PER_AGENT?: string;
  WS_ALLOWED_ORIGINS?: string;
  WS_MAX_BUFFERED_BYTES?: string;
  WS_MAX_EVENTS_IN_FLIGHT?: string;
  POSITION_CHECK_INTERVAL_MS?: string;
  CORS_ORIGINS?: string;
  COMPANY_ID?: string;
  TRUST_PROXY?: string;
  LOG_LEVEL?: string;
  DB_POOL_MAX?: string;
  SESSION_EXCHANGE_CONCURRENCY?: string;
  SQLITE_SYNCHRONOUS?: string;
  SQLITE_LOCK_TIMEOUT_MS?: string;
  PRESENCE_TTL_SECONDS?: string;
  WEBHOOK_RETRY_SCHEDULE?: string;
  WEBHOOK_ALLOW_PRIVATE_TARGETS?: string;
  PUBLIC_URL?: string;
  OAUTH_ACCESS_TOKEN_TTL_SECONDS?: string;
  FILE_MAX_BYTES?: string;
  FILE_QUOTA_BYTES?: string;
  REQUEST_TIMEOUT_SECONDS?: string;
  RETENTION_DAYS?: string;
  RETENTION_SWEEP_SECONDS?: string;
  /** TEST ONLY (the crash test of docs/tasks.md, "A move is one commit"): see Config.testPauseTaskMove. */
  AMS_TEST_PAUSE_TASK_MOVE?: string;
  /** TEST ONLY (short leases in the tests of leases running out): see Config.testMinLeaseSeconds. */
  AMS_TEST_MIN_LEASE_SECONDS?: string;
  /** Seconds without an append after which an open streamed message is ended `interrupted` (docs/streaming.md). */
  STREAM_IDLE_SECONDS?: string;
}

const KEYS: (keyof RawEnv)[] = [
  'PORT', 'HOST', 'DATABASE_URL', 'REDIS_URL', 'REDIS_KEY_PREFIX', 'REDIS_ADAPTER_MODE', 'JWT_SECRET', 'JWT_TTL_SECONDS', 'AUTHZ_MODE',
  'RATE_LIMIT_ANON_PER_MINUTE', 'RATE_LIMIT_AGENT_PER_MINUTE', 'WAITS_PER_AGENT', 'WS_EVENTS_PER_SECOND',
  'WS_ABUSE_EVENTS_PER_SECOND', 'WS_ABUSE_SECONDS', 'WS_MAX_CONNECTIONS_PER_AGENT',
  'WS_ALLOWED_ORIGINS', 'COMPANY_ID', 'TRUST_PROXY', 'LOG_LEVEL', 'DB_POOL_MAX',
  'SESSION_EXCHANGE_CONCURRENCY', 'SQLITE_SYNCHRONOUS', 'SQLITE_LOCK_TIMEOUT_MS', 'PRESENCE_TTL_SECONDS',
  'WS_MAX_BUFFERED_BYTES', 'WS_MAX_EVENTS_IN_FLIGHT', 'POSITION_CHECK_INTERVAL_MS', 'CORS_ORIGINS', 'WEBHOOK_RETRY_SCHEDULE', 'WEBHOOK_ALLOW_PRIVATE_TARGETS',
  'PUBLIC_URL', 'OAUTH_ACCESS_TOKEN_TTL_SECONDS',
  'FILE_MAX_BYTES', 'FILE_QUOTA_BYTES', 'REQUEST_TIMEOUT_SECONDS', 'RETENTION_DAYS', 'RETENTION_SWEEP_SECONDS', 'AMS_TEST_PAUSE_TASK_MOVE', 'STREAM_IDLE_SECONDS',
  'AMS_TEST_MIN_LEASE_SECONDS',
];

export function readEnv(source: NodeJS.ProcessEnv = process.env): RawEnv {
  const env: RawEnv = {};
  for (const key of KEYS) {
    const value = source[key];
    // An empty variable means "not set", as in most twelve-factor tooling.
    if (value !== undefined && value !== '') env[key] = value;
  }
  return env;
}
