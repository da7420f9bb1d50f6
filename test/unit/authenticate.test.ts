import { describe, expect, it } from 'vitest';
import type { ApiTokenAuth } from '../../src/core/auth/api-token-auth.js';
import { authenticateCredential, authenticateFirst, costsHash, type Authenticators } from '../../src/core/auth/authenticate.js';
import type { SessionAuth, SessionPrincipal } from '../../src/core/auth/session-auth.js';
import { AppError, unauthenticated } from '../../src/errors.js';
import { createWaitSlots } from '../../src/limits/wait-slots.js';

const API_TOKEN = `agt_${'a'.repeat(12)}_${'b'.repeat(64)}`;
const principalOf = (agentId: string): SessionPrincipal => ({ agentId, role: 'agent', exp: 0 });

/** SessionAuth and ApiTokenAuth fakes that record what they were asked: valid credentials are `jwt:<agent>` and API_TOKEN. */
function fakes(verified = false): Authenticators & { asked: string[] } {
  const asked: string[] = [];
  const sessionAuth = {
    async authenticate(jwt: string) {
      asked.push(`jwt ${jwt}`);
      if (jwt.startsWith('jwt:')) return principalOf(jwt.slice(4));
      if (jwt === 'broken-store') throw new Error('database unavailable');
      throw unauthenticated('Invalid or expired token');
    },
  } as unknown as SessionAuth;
  const apiTokenAuth = {
    async authenticate(token: string) {
      asked.push(`api ${token}`);
      if (token === API_TOKEN) return principalOf('from-token');
      throw unauthenticated('Invalid or expired API token');
    },
    isVerified: () => verified,
  } as unknown as ApiTokenAuth;
  const oauth = {
    async authenticate(token: string) {
      asked.push(`oauth ${token}`);
      throw unauthenticated('Invalid or expired access token');
    },
  };
  return { sessionAuth, apiTokenAuth, oauth, asked };
}

describe('authenticateCredential: the one decision on a credential', () => {
  it('takes a session JWT everywhere and an API token only where the entry point accepts one', async () => {
    const auth = fakes();
    expect(await authenticateCredential(auth, 'jwt:alice')).toMatchObject({ agentId: 'alice' });
    expect(await authenticateCredential(auth, API_TOKEN, { apiToken: true })).toMatchObject({ agentId: 'from-token' });
    await expect(authenticateCredential(auth, API_TOKEN)).rejects.toMatchObject({ code: 'UNAUTHENTICATED', message: expect.stringMatching(/^An API token cannot be used here/) });
    // Refused without touching the API-token verification (no hash for a route that takes none).
    expect(auth.asked).toEqual(['jwt jwt:alice', `api ${API_TOKEN}`]);
  });

  it('an API token costs a hash only where accepted and not yet verified on this node', () => {
    expect(costsHash(fakes(false), API_TOKEN, { apiToken: true })).toBe(true);
    expect(costsHash(fakes(true), API_TOKEN, { apiToken: true })).toBe(false);
    expect(costsHash(fakes(false), API_TOKEN)).toBe(false);
    expect(costsHash(fakes(false), 'jwt:alice', { apiToken: true })).toBe(false);
  });
});

describe('authenticateFirst: several candidates (a WebSocket handshake)', () => {
  it('the first that authenticates wins; none: the missing message; all refused: the last refusal', async () => {
    const auth = fakes();
    expect(await authenticateFirst(auth, ['stale', 'jwt:bob'], 'missing')).toEqual({ agentId: 'bob', role: 'agent' });
    await expect(authenticateFirst(auth, [], 'A session JWT is required')).rejects.toMatchObject({ code: 'UNAUTHENTICATED', message: 'A session JWT is required' });
    await expect(authenticateFirst(auth, ['stale', API_TOKEN], 'missing')).rejects.toMatchObject({ message: expect.stringMatching(/^An API token cannot be used here/) });
  });

  it('a storage failure is not a refusal: it propagates at once', async () => {
    const auth = fakes();
    const failure = await authenticateFirst(auth, ['broken-store', 'jwt:bob'], 'missing').catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(Error);
    expect(failure).not.toBeInstanceOf(AppError);
    expect(auth.asked).toEqual(['jwt broken-store']);
  });
});

describe('wait slots: long-poll waits per agent', () => {
  it('at most perAgent per agent, each agent its own; a release frees one slot once', () => {
    const slots = createWaitSlots(2);
    const first = slots.acquire('a');
    slots.acquire('a');
    expect(() => slots.acquire('a')).toThrow(expect.objectContaining({ code: 'RATE_LIMITED' }));
    expect(slots.heldBy('a')).toBe(2);
    slots.acquire('b');
    first();
    first();
    expect(slots.heldBy('a')).toBe(1);
    slots.acquire('a');
    expect(slots.heldBy('a')).toBe(2);
  });
});
