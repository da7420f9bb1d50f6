import { pino, type Logger } from 'pino';
import type { LogLevel } from './config/config.js';

/** The one logger setup. Credentials never reach the logs, whatever a caller puts in an object. */
export function createLogger(level: LogLevel): Logger {
  return pino({
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
  });
}
