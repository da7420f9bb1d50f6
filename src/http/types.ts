import type { Principal } from '../core/principal.js';
import type { AppError } from '../errors.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The agent behind a valid session JWT, or null. Set once per request by the auth hook. */
    principal: Principal | null;
    /** Why the request's bearer was refused (invalid, expired, revoked...), or null: none was sent, or it was accepted. */
    authFailure: AppError | null;
    /**
     * Charges this request's rate limit `points` more (a JSON-RPC batch on `/mcp` costs one point per
     * call); rejects with RATE_LIMITED when the budget cannot pay.
     */
    chargeMore(points: number): Promise<void>;
  }
  interface FastifyContextConfig {
    /** The route takes an API token as its bearer (`/mcp`), besides a session JWT. */
    acceptsApiToken?: boolean;
    /** The route is the OAuth protected resource (`/mcp`): an OAuth access token for it is accepted. */
    acceptsOAuth?: boolean;
  }
}
