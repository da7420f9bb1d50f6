import { pino, type DestinationStream, type Logger, type LoggerOptions } from 'pino';
import type { LogLevel } from './config/config.js';

/**
 * The one logger setup. Credentials never reach the logs, whatever a caller puts in an object.
 * `destination` defaults to stdout; tests pass a stream to read what would be logged.
 */
export function createLogger(level: LogLevel, destination?: DestinationStream): Logger {
  const options: LoggerOptions = {
    level,
    redact: {
      paths: [
        'req.headers.authorization',
        'req.headers["x-agent-id"]',
        'req.query.token',
        'headers.authorization',
        'token',
        'apiToken',
        '*.token',
        '*.apiToken',
      ],
      censor: '[redacted]',
    },
    serializers: {
      // Fastify logs req.url; strip any query string so a `?token=` never lands in a log line.
      req: (req: { method?: string; url?: string; ip?: string }) => ({ method: req.method, url: req.url?.split('?')[0], ip: req.ip }),
    },
  };
  return destination ? pino(options, destination) : pino(options);
}
