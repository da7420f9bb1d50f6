import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Config } from './config/config.js';
import { createContext, type AppContext, type ContextOverrides } from './context.js';
import { buildHttpServer } from './http/server.js';
import { attachRealtime, type Realtime } from './realtime/realtime.js';

export interface RunningApp {
  ctx: AppContext;
  http: FastifyInstance;
  /** The Socket.IO server on the same HTTP server (namespace /agents). */
  realtime: Realtime;
  /** http://host:port the server listens on. */
  url: string;
  /** Stops accepting, lets in-flight work finish, then closes sockets, storage and Redis. */
  close(): Promise<void>;
}

export async function startApp(config: Config, logger: Logger, overrides: ContextOverrides = {}): Promise<RunningApp> {
  const ctx = await createContext(config, logger, overrides);
  const http = buildHttpServer(ctx);
  const realtime = await attachRealtime(ctx, http.server, { adapterKey: overrides.realtimeAdapterKey });
  try {
    await http.listen({ port: config.port, host: config.host });
  } catch (err) {
    await realtime.close();
    await ctx.close();
    throw err;
  }
  ctx.webhookWorker.start();
  ctx.files.start();
  ctx.retention.start((err) => logger.warn({ err: { message: err instanceof Error ? err.message : String(err) } }, 'retention sweep failed'));
  ctx.streams.startSweep();
  ctx.tasks.startExpiry((err) => logger.warn({ err: { message: err instanceof Error ? err.message : String(err) } }, 'task expiry sweep failed'));
  ctx.leases.startExpiry((err) => logger.warn({ err: { message: err instanceof Error ? err.message : String(err) } }, 'lease expiry sweep failed'));
  const address = http.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : config.port;
  const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
  if (config.publicUrl === null) ctx.publicUrl.value = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;

  let closing: Promise<void> | undefined;
  return {
    ctx,
    http,
    realtime,
    url: `http://${host}:${port}`,
    close() {
      closing ??= (async () => {
        // Held inbox requests answer now (empty), so they do not keep the close waiting.
        ctx.inboxWaiters.close();
        ctx.taskWaiters.close();
        // Both stop accepting at once; the HTTP server finishes closing only once the sockets are gone.
        const httpClosed = http.close();
        await realtime.close();
        await httpClosed;
        await ctx.close();
      })();
      return closing;
    },
  };
}
