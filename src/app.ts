import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Config } from './config/config.js';
import { createContext, type AppContext, type ContextOverrides } from './context.js';
import { buildHttpServer } from './http/server.js';

export interface RunningApp {
  ctx: AppContext;
  http: FastifyInstance;
  /** http://host:port the server listens on. */
  url: string;
  /** Stops accepting, lets in-flight work finish, then closes sockets, storage and Redis. */
  close(): Promise<void>;
}

export async function startApp(config: Config, logger: Logger, overrides: ContextOverrides = {}): Promise<RunningApp> {
  const ctx = await createContext(config, logger, overrides);
  const http = buildHttpServer(ctx);
  try {
    await http.listen({ port: config.port, host: config.host });
  } catch (err) {
    await ctx.close();
    throw err;
  }
  const address = http.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : config.port;
  const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;

  let closing: Promise<void> | undefined;
  return {
    ctx,
    http,
    url: `http://${host}:${port}`,
    close() {
      closing ??= (async () => {
        await http.close();
        await ctx.close();
      })();
      return closing;
    },
  };
}
