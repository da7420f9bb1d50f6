import { describe, expect, it } from 'vitest';
import { buildConfig, ConfigError, exposureWarning } from '../../src/config/config.js';
import { readEnv } from '../../src/config/env.js';

const SECRET = 'x'.repeat(32);

describe('readEnv', () => {
  it('keeps only the known variables, and treats empty ones as unset', () => {
    const env = readEnv({ PORT: '8080', JWT_SECRET: '', HOME: '/root', AUTHZ_MODE: 'strict', UNRELATED: 'x' });
    expect(env).toEqual({ PORT: '8080', AUTHZ_MODE: 'strict' });
  });
});

describe('buildConfig', () => {
  it('has the documented defaults (README.md, Configuration)', () => {
    const config = buildConfig({});
    expect(config).toMatchObject({
      port: 3000,
      host: '127.0.0.1',
      database: { kind: 'sqlite', path: './data/ams.sqlite' },
      redisUrl: null,
      redisAdapterMode: 'auto',
      jwtSecret: null,
      jwtTtlSeconds: 900,
      authzMode: 'open',
      rateLimit: { anonPerMinute: 100, agentPerMinute: 600 },
      ws: { eventsPerSecond: 30, abuseEventsPerSecond: 50, abuseSeconds: 10 },
      companyId: 'default',
      trustProxy: false,
      logLevel: 'info',
    });
  });

  it('reads every documented variable', () => {
    const config = buildConfig({
      PORT: '8080',
      HOST: '127.0.0.1',
      DATABASE_URL: 'postgres://u:p@db:5432/ams',
      REDIS_URL: 'redis://cache:6379',
      REDIS_ADAPTER_MODE: 'classic',
      JWT_SECRET: SECRET,
      JWT_TTL_SECONDS: '60',
      AUTHZ_MODE: 'strict',
      RATE_LIMIT_ANON_PER_MINUTE: '10',
      RATE_LIMIT_AGENT_PER_MINUTE: '20',
      WS_EVENTS_PER_SECOND: '5',
      WS_ABUSE_EVENTS_PER_SECOND: '7',
      WS_ABUSE_SECONDS: '3',
      COMPANY_ID: 'acme',
      TRUST_PROXY: 'true',
      LOG_LEVEL: 'debug',
    });
    expect(config).toMatchObject({
      port: 8080,
      host: '127.0.0.1',
      database: { kind: 'postgres', url: 'postgres://u:p@db:5432/ams' },
      redisUrl: 'redis://cache:6379',
      redisAdapterMode: 'classic',
      jwtSecret: SECRET,
      jwtTtlSeconds: 60,
      authzMode: 'strict',
      rateLimit: { anonPerMinute: 10, agentPerMinute: 20 },
      ws: { eventsPerSecond: 5, abuseEventsPerSecond: 7, abuseSeconds: 3 },
      companyId: 'acme',
      trustProxy: true,
      logLevel: 'debug',
    });
  });

  it('parses the DATABASE_URL forms', () => {
    expect(buildConfig({ DATABASE_URL: 'sqlite::memory:' }).database).toMatchObject({ kind: 'sqlite', path: ':memory:' });
    expect(buildConfig({ DATABASE_URL: 'sqlite:/var/lib/ams/db.sqlite' }).database).toMatchObject({ kind: 'sqlite', path: '/var/lib/ams/db.sqlite' });
    expect(buildConfig({ DATABASE_URL: 'postgresql://h/db', JWT_SECRET: SECRET }).database).toMatchObject({ kind: 'postgres', url: 'postgresql://h/db' });
  });

  it('parses TRUST_PROXY as a boolean, a hop count, or addresses', () => {
    expect(buildConfig({ TRUST_PROXY: 'false' }).trustProxy).toBe(false);
    expect(buildConfig({ TRUST_PROXY: '2' }).trustProxy).toBe(2);
    expect(buildConfig({ TRUST_PROXY: '10.0.0.0/8,127.0.0.1' }).trustProxy).toBe('10.0.0.0/8,127.0.0.1');
  });

  it('accepts a JWT_SECRET of exactly 32 bytes, counted in UTF-8', () => {
    expect(buildConfig({ JWT_SECRET: SECRET }).jwtSecret).toBe(SECRET);
    expect(buildConfig({ JWT_SECRET: 'é'.repeat(16) }).jwtSecret).toBe('é'.repeat(16));
  });

  it.each([
    [{ PORT: 'abc' }, 'PORT'],
    [{ PORT: '-1' }, 'PORT'],
    [{ PORT: '65536' }, 'PORT'],
    [{ PORT: '80.5' }, 'PORT'],
    [{ JWT_SECRET: 'x'.repeat(31) }, 'JWT_SECRET'],
    [{ JWT_SECRET: 'é'.repeat(15) }, 'JWT_SECRET'],
    [{ DATABASE_URL: 'postgres://h/db' }, 'JWT_SECRET'],
    [{ DATABASE_URL: 'mysql://h/db' }, 'DATABASE_URL'],
    [{ DATABASE_URL: 'sqlite:' }, 'DATABASE_URL'],
    [{ DATABASE_URL: 'postgres://a b/db', JWT_SECRET: SECRET }, 'DATABASE_URL'],
    [{ AUTHZ_MODE: 'x' }, 'AUTHZ_MODE'],
    [{ AUTHZ_MODE: 'STRICT' }, 'AUTHZ_MODE'],
    [{ JWT_TTL_SECONDS: '0' }, 'JWT_TTL_SECONDS'],
    [{ JWT_TTL_SECONDS: '15m' }, 'JWT_TTL_SECONDS'],
    [{ RATE_LIMIT_ANON_PER_MINUTE: '0' }, 'RATE_LIMIT_ANON_PER_MINUTE'],
    [{ RATE_LIMIT_AGENT_PER_MINUTE: 'lots' }, 'RATE_LIMIT_AGENT_PER_MINUTE'],
    [{ WS_EVENTS_PER_SECOND: '0' }, 'WS_EVENTS_PER_SECOND'],
    [{ WS_ABUSE_SECONDS: '1e3' }, 'WS_ABUSE_SECONDS'],
    [{ REDIS_URL: 'cache:6379' }, 'REDIS_URL'],
    [{ REDIS_ADAPTER_MODE: 'Sharded' }, 'REDIS_ADAPTER_MODE'],
    [{ LOG_LEVEL: 'verbose' }, 'LOG_LEVEL'],
    [{ COMPANY_ID: 'has space' }, 'COMPANY_ID'],
    [{ CORS_ORIGINS: '*' }, 'CORS_ORIGINS'],
    [{ CORS_ORIGINS: 'https://a.example.com,*' }, 'CORS_ORIGINS'],
    [{ CORS_ORIGINS: 'app.example.com' }, 'CORS_ORIGINS'],
    [{ CORS_ORIGINS: 'ftp://app.example.com' }, 'CORS_ORIGINS'],
    [{ CORS_ORIGINS: 'https://app.example.com/path' }, 'CORS_ORIGINS'],
    [{ CORS_ORIGINS: 'https://app.example.com?x=1' }, 'CORS_ORIGINS'],
    [{ CORS_ORIGINS: 'https://user:pw@app.example.com' }, 'CORS_ORIGINS'],
  ])('refuses %j with a ConfigError naming %s', (env, variable) => {
    let error: unknown;
    try {
      buildConfig(env);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as Error).message;
    expect(message).toContain(variable);
    expect(message).not.toContain('\n');
  });

  it('lets tools that sign no JWT run against PostgreSQL without JWT_SECRET', () => {
    expect(buildConfig({ DATABASE_URL: 'postgres://h/db' }, { requireJwtSecret: false }).jwtSecret).toBeNull();
    expect(() => buildConfig({ DATABASE_URL: 'postgres://h/db', JWT_SECRET: 'short' }, { requireJwtSecret: false })).toThrow(ConfigError);
  });

  it('CORS_ORIGINS: none by default; a list of origins, kept as browsers send them', () => {
    expect(buildConfig({}).corsOrigins).toEqual([]);
    expect(buildConfig({ CORS_ORIGINS: ' https://App.Example.com , http://localhost:5173/,https://app.example.com:443,http://10.0.0.5:8080 ' }).corsOrigins)
      .toEqual(['https://app.example.com', 'http://localhost:5173', 'http://10.0.0.5:8080']);
  });

  it('WEBHOOK_RETRY_SCHEDULE: seconds, comma separated; `none` for a single attempt; WEBHOOK_ALLOW_PRIVATE_TARGETS', () => {
    expect(buildConfig({}).webhooks).toEqual({ retryScheduleSeconds: [5, 300, 1800, 7200, 18000, 36000], allowPrivateTargets: false });
    expect(buildConfig({ WEBHOOK_RETRY_SCHEDULE: '1, 1,60' }).webhooks.retryScheduleSeconds).toEqual([1, 1, 60]);
    expect(buildConfig({ WEBHOOK_RETRY_SCHEDULE: 'none' }).webhooks.retryScheduleSeconds).toEqual([]);
    // Empty is unset, as for every variable: the default.
    expect(buildConfig(readEnv({ WEBHOOK_RETRY_SCHEDULE: '' })).webhooks.retryScheduleSeconds).toHaveLength(6);
    for (const bad of ['1,,2', '-1', '1.5', 'soon', String(8 * 24 * 3600), Array(21).fill('1').join(',')]) {
      expect(() => buildConfig({ WEBHOOK_RETRY_SCHEDULE: bad }), bad).toThrow(ConfigError);
    }
    expect(buildConfig({ WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' }).webhooks.allowPrivateTargets).toBe(true);
    expect(() => buildConfig({ WEBHOOK_ALLOW_PRIVATE_TARGETS: 'yes' })).toThrow(ConfigError);
  });

  it('PUBLIC_URL (docs/oauth.md): an http(s) URL kept without a trailing slash; OAUTH_ACCESS_TOKEN_TTL_SECONDS', () => {
    expect(buildConfig({}).publicUrl).toBeNull();
    expect(buildConfig({ PUBLIC_URL: 'https://ams.example.com/' }).publicUrl).toBe('https://ams.example.com');
    expect(buildConfig({ PUBLIC_URL: 'https://ams.example.com:8443/ams/' }).publicUrl).toBe('https://ams.example.com:8443/ams');
    for (const bad of ['ams.example.com', 'ftp://ams.example.com', 'https://ams.example.com/?x=1', 'https://user@ams.example.com', 'https://ams.example.com/#top']) {
      expect(() => buildConfig({ PUBLIC_URL: bad }), bad).toThrow(ConfigError);
    }
    expect(buildConfig({}).oauthAccessTokenTtlSeconds).toBe(3600);
    expect(buildConfig({ OAUTH_ACCESS_TOKEN_TTL_SECONDS: '600' }).oauthAccessTokenTtlSeconds).toBe(600);
    expect(() => buildConfig({ OAUTH_ACCESS_TOKEN_TTL_SECONDS: '10' })).toThrow(ConfigError);
  });

  it('RETENTION_DAYS: unset keeps everything; a decimal number of days above 0; RETENTION_SWEEP_SECONDS (docs/retention.md)', () => {
    expect(buildConfig({}).retention).toEqual({ defaultDays: null, sweepIntervalMs: 3_600_000 });
    expect(buildConfig(readEnv({ RETENTION_DAYS: '0.0001', RETENTION_SWEEP_SECONDS: '2' })).retention).toEqual({ defaultDays: 0.0001, sweepIntervalMs: 2000 });
    expect(buildConfig({ RETENTION_DAYS: '30' }).retention.defaultDays).toBe(30);
    expect(buildConfig({ RETENTION_DAYS: '.5' }).retention.defaultDays).toBe(0.5);
    expect(buildConfig(readEnv({ RETENTION_DAYS: '' })).retention.defaultDays).toBeNull();
    for (const bad of ['0', '-1', '1e3', 'forever', '36501', '1.', 'NaN', '0.0']) {
      expect(() => buildConfig({ RETENTION_DAYS: bad }), bad).toThrow(ConfigError);
    }
    for (const bad of ['0', '1.5', String(8 * 24 * 3600)]) expect(() => buildConfig({ RETENTION_SWEEP_SECONDS: bad }), bad).toThrow(ConfigError);
  });

  it('AMS_TEST_PAUSE_TASK_MOVE (test only, docs/tasks.md): absent from the configuration unless "true"', () => {
    expect('testPauseTaskMove' in buildConfig({})).toBe(false);
    expect('testPauseTaskMove' in buildConfig({ AMS_TEST_PAUSE_TASK_MOVE: 'false' })).toBe(false);
    expect(buildConfig(readEnv({ AMS_TEST_PAUSE_TASK_MOVE: 'true' })).testPauseTaskMove).toBe(true);
    expect(() => buildConfig({ AMS_TEST_PAUSE_TASK_MOVE: '1' })).toThrow(ConfigError);
  });
});

describe('exposureWarning', () => {
  it('warns, in one line, when open mode listens beyond loopback, and names what is exposed', () => {
    for (const host of ['0.0.0.0', '::', '10.1.2.3', 'ams.internal']) {
      const warning = exposureWarning({ host, port: 3000, authzMode: 'open' });
      expect(warning, host).toContain(`HOST=${host}`);
      expect(warning).toContain('create agents (admins included)');
      expect(warning).toContain('port 3000');
      expect(warning).not.toContain('\n');
    }
  });

  it('stays silent on loopback or in strict mode', () => {
    for (const host of ['127.0.0.1', '127.0.1.1', 'localhost', '::1']) expect(exposureWarning({ host, port: 3000, authzMode: 'open' }), host).toBeNull();
    expect(exposureWarning({ host: '0.0.0.0', port: 3000, authzMode: 'strict' })).toBeNull();
  });
});
