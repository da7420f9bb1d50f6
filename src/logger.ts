import { pino, stdSerializers, type DestinationStream, type Logger } from 'pino';
import type { LogLevel } from './config/config.js';

/**
 * Credentials that may turn up in any string: session JWTs (a JWT header always starts with
 * "eyJ", base64 of '{"'), API tokens (the public `agt_<prefix>` part is kept, the secret is not),
 * bearer values, and `token=`-like query parameters (the WebSocket handshake carries the JWT there).
 */
const SECRET_PATTERNS: readonly [RegExp, string][] = [
  [/eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*/g, '[redacted]'],
  [/\b(agt_[A-Za-z0-9]*_)[^\s"\\&,;]+/g, '$1[redacted]'],
  [/\b(Bearer\s+)[^\s"\\,;]+/gi, '$1[redacted]'],
  [/([?&](?:token|access_token|apiToken|jwt)=)[^&\s"\\#]*/gi, '$1[redacted]'],
];

/** Removes credentials from one serialized log line. */
export function scrubSecrets(line: string): string {
  let out = line;
  for (const [pattern, replacement] of SECRET_PATTERNS) out = out.replace(pattern, replacement);
  return out;
}

/**
 * The one logger setup. Credentials never reach the logs: known fields are redacted, and every
 * line passes through scrubSecrets before it is written, whatever a caller put in it (a URL with
 * `?token=`, an error message quoting a header). Stack traces are logged only at debug and trace.
 */
export function createLogger(level: LogLevel, destination?: DestinationStream): Logger {
  const target = destination ?? pino.destination({ dest: 1, sync: false });
  const withStacks = level === 'debug' || level === 'trace';
  return pino(
    {
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
        err: (err: Error) => {
          const serialized: Record<string, unknown> = { ...stdSerializers.err(err) };
          if (!withStacks) delete serialized.stack;
          return serialized;
        },
      },
    },
    { write: (line: string) => target.write(scrubSecrets(line)) },
  );
}
