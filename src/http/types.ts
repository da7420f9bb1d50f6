import type { Principal } from '../core/principal.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The agent behind a valid session JWT, or null. Set once per request by the auth hook. */
    principal: Principal | null;
  }
  interface FastifyContextConfig {
    /** The route takes an API token as its bearer (`/mcp`), besides a session JWT. */
    acceptsApiToken?: boolean;
  }
}
