import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { createSigner } from 'fast-jwt';
import { freePort, startNode, waitForHttp } from './processes.js';

/** Limits raised so that the service's rate limiters never throttle the load itself. */
const UNTHROTTLED = {
  RATE_LIMIT_ANON_PER_MINUTE: '10000000',
  RATE_LIMIT_AGENT_PER_MINUTE: '10000000',
  WS_EVENTS_PER_SECOND: '1000000',
  WS_ABUSE_EVENTS_PER_SECOND: '1000000',
  WS_ABUSE_SECONDS: '3600',
  WS_MAX_CONNECTIONS_PER_AGENT: '100000',
};

export const newJwtSecret = () => randomBytes(32).toString('hex');

/**
 * Lifetime of the session JWTs the bench mints, and so the service's JWT_TTL_SECONDS: the service
 * refuses a JWT whose exp is further after its iat than its own lifetime allows.
 */
export const BENCH_JWT_TTL_SECONDS = 3600;

/**
 * Starts `node dist/main.js` with its own database and a fixed JWT secret (so the bench can mint
 * session JWTs for thousands of agents without thousands of Argon2 exchanges).
 * @param {{name?: string, databaseUrl: string, jwtSecret: string, redisUrl?: string, profileDir?: string, env?: Record<string,string>, dist?: string}} options
 *   dist: the build to run (`--compare-dist` runs another build of the service alongside)
 */
export async function startService({ name = 'service', databaseUrl, jwtSecret, redisUrl, profileDir, env = {}, nodeArgs: extraArgs = [], dist = 'dist' }) {
  const port = await freePort();
  const nodeArgs = [...extraArgs, ...(profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`, `--cpu-prof-name=${name}-${Date.now()}.cpuprofile`] : [])];
  const proc = startNode({
    name,
    script: join(dist, 'main.js'),
    nodeArgs,
    env: {
      ...UNTHROTTLED,
      PORT: String(port),
      HOST: '127.0.0.1',
      DATABASE_URL: databaseUrl,
      JWT_SECRET: jwtSecret,
      JWT_TTL_SECONDS: String(BENCH_JWT_TTL_SECONDS),
      LOG_LEVEL: 'warn',
      REDIS_URL: redisUrl ?? '',
      NODE_ENV: 'production',
      ...env,
    },
  });
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitForHttp(proc, `${url}/readyz`);
  } catch (err) {
    await proc.stop();
    throw err;
  }
  return { proc, url, api: new ServiceApi(url), jwtSecret };
}

/** Starts a bench baseline script (R1/R2 relay, bare history route) on a free port. */
export async function startBaseline({ name, script, env = {}, healthPath = '/healthz', profileDir, nodeArgs: extraArgs = [] }) {
  const port = await freePort();
  const nodeArgs = [...extraArgs, ...(profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`, `--cpu-prof-name=${name}-${Date.now()}.cpuprofile`] : [])];
  const proc = startNode({ name, script, nodeArgs, env: { ...env, PORT: String(port), NODE_ENV: 'production' } });
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitForHttp(proc, `${url}${healthPath}`);
  } catch (err) {
    await proc.stop();
    throw err;
  }
  return { proc, url };
}

/** Session JWTs exactly as docs/protocol.md describes them: HS256, {agentId, role, iat, exp}. */
export function jwtMinter(secret, ttlSeconds = BENCH_JWT_TTL_SECONDS) {
  const sign = createSigner({ key: Buffer.from(secret, 'utf8'), algorithm: 'HS256' });
  return (agentId, role = 'agent') => {
    const iat = Math.floor(Date.now() / 1000);
    return sign({ agentId, role, iat, exp: iat + ttlSeconds });
  };
}

let counter = 0;
const unique = (base) => `${base}-${process.pid.toString(36)}-${Date.now().toString(36)}-${(counter++).toString(36)}`;

/** The REST calls the bench needs to set up its fixtures. */
export class ServiceApi {
  constructor(url) {
    this.url = url;
  }

  async request(method, path, { body, headers = {} } = {}) {
    const init = { method, headers: { ...headers } };
    if (body !== undefined) {
      init.body = JSON.stringify(body);
      init.headers['content-type'] = 'application/json';
    }
    const res = await fetch(`${this.url}${path}`, init);
    const text = await res.text();
    return { status: res.status, body: text === '' ? null : JSON.parse(text) };
  }

  async expect(status, method, path, options) {
    const res = await this.request(method, path, options);
    if (res.status !== status) throw new Error(`${method} ${path}: expected ${status}, got ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  }

  createAgent(role = 'agent') {
    const name = unique(role === 'admin' ? 'bench-admin' : 'bench');
    return this.expect(201, 'POST', '/api/v1/agents', { body: { name, displayName: name, role } });
  }

  /** `count` agents, created with bounded concurrency. */
  async createAgents(count, role = 'agent', concurrency = 8) {
    const agents = new Array(count);
    let next = 0;
    const worker = async () => {
      while (next < count) {
        const i = next++;
        agents[i] = await this.createAgent(role);
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
    return agents;
  }

  /** A room created by `adminId` (a member automatically) with `memberIds`. */
  createRoom(adminId, memberIds) {
    const slug = unique('bench-room');
    return this.expect(201, 'POST', '/rooms', { body: { slug, name: slug, members: memberIds }, headers: { 'x-agent-id': adminId } });
  }

  issueToken(agentId) {
    return this.expect(201, 'POST', `/api/v1/agents/${agentId}/tokens`, { body: { scopes: {} } });
  }

  exchange(apiToken) {
    return this.expect(201, 'POST', '/api/v1/sessions', { headers: { authorization: `Bearer ${apiToken}` } });
  }
}
