import type { Socket } from 'socket.io';
import { authenticateFirst, type Authenticators } from '../../core/auth/authenticate.js';
import type { Principal } from '../../core/principal.js';

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
 * The handshake's principal: its candidate JWTs go to the one credential decision (core/auth), as
 * a REST request's bearer does, reading the agent's and token's state fresh (a connection lasts; the
 * connection handler relies on this read to skip a second one); throws UNAUTHENTICATED otherwise, or
 * the storage error when the token state cannot be read.
 */
export function authenticateHandshake(auth: Authenticators, handshake: Pick<Handshake, 'auth' | 'query'>): Promise<Principal> {
  return authenticateFirst(auth, handshakeTokens(handshake), 'A session JWT is required: connect with ?token=<JWT> or auth: {token}', { fresh: true });
}
