import type { Socket } from 'socket.io';
import type { SessionAuth } from '../../core/auth/session-auth.js';
import type { Principal } from '../../core/principal.js';
import { AppError, unauthenticated } from '../../errors.js';

type Handshake = Socket['handshake'];

/**
 * The session JWT of a handshake: `auth.token` (the Socket.IO idiom, which a client can refresh on
 * every reconnect) and the query `token` (docs/protocol.md, Connecting). When both are sent, the first that verifies wins,
 * so a client that refreshes `auth` while its URL still carries an old token keeps working.
 */
export function handshakeTokens(handshake: Pick<Handshake, 'auth' | 'query'>): string[] {
  const candidates: unknown[] = [];
  const auth: unknown = handshake.auth;
  if (typeof auth === 'object' && auth !== null && 'token' in auth) candidates.push(auth.token);
  const query = handshake.query.token;
  candidates.push(...(Array.isArray(query) ? query : [query]));
  return candidates.filter((t): t is string => typeof t === 'string' && t !== '');
}

/**
 * Authenticates the handshake's JWT the way REST authenticates a request (SessionAuth: HS256 pinned,
 * `exp` required, and in strict mode an unrevoked API token); throws UNAUTHENTICATED otherwise, or
 * the storage error when the token state cannot be read.
 */
export async function authenticateHandshake(sessionAuth: SessionAuth, handshake: Pick<Handshake, 'auth' | 'query'>): Promise<Principal> {
  const tokens = handshakeTokens(handshake);
  if (tokens.length === 0) throw unauthenticated('A session JWT is required: connect with ?token=<JWT> or auth: {token}');
  let failure: unknown;
  for (const token of tokens) {
    try {
      const { exp: _exp, ...principal } = await sessionAuth.authenticate(token);
      return principal;
    } catch (err) {
      if (!(err instanceof AppError && err.code === 'UNAUTHENTICATED')) throw err;
      failure = err;
    }
  }
  throw failure;
}
