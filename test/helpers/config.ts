import { buildConfig, type Config } from '../../src/config/config.js';

/** The configuration tests start from: built from the environment as in production, with in-memory SQLite and quiet logs. */
export function testConfig(overrides: Partial<Config> = {}): Config {
  return { ...buildConfig({ DATABASE_URL: 'sqlite::memory:', LOG_LEVEL: 'silent', PORT: '0', HOST: '127.0.0.1' }), ...overrides };
}
