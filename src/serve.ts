import { buildConfig, ConfigError, exposureWarning } from './config/config.js';
import { readEnv } from './config/env.js';
import { createLogger } from './logger.js';

/**
 * Runs the server process: reads the configuration from the environment, starts the service and
 * closes it gracefully on SIGTERM/SIGINT. The one startup path of `node dist/main.js` (`npm start`)
 * and `ams serve`.
 */
export async function serve(): Promise<void> {
  let config;
  try {
    config = buildConfig(readEnv());
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(`configuration error: ${err.message}`);
      process.exit(1);
    }
    throw err;
  }
  const logger = createLogger(config.logLevel);
  // Loaded only once the configuration is valid, so a configuration error is reported at once.
  const { startApp } = await import('./app.js');
  const app = await startApp(config, logger);
  logger.info({ url: app.url, database: config.database.kind, redis: config.redisUrl !== null, authz: config.authzMode }, 'agent messaging service listening');
  const warning = exposureWarning({ ...config, port: Number(new URL(app.url).port) });
  if (warning !== null) logger.warn(warning);

  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    // A hard deadline so a stuck dependency cannot keep the process alive forever.
    const deadline = setTimeout(() => {
      logger.error('shutdown took longer than 15 s; exiting');
      process.exit(1);
    }, 15_000);
    deadline.unref();
    app.close().then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

/** `serve()`, exiting 1 with one line when startup fails. */
export function serveOrExit(): void {
  serve().catch((err: unknown) => {
    console.error(`startup failed: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  });
}
