import { beforeAll, describe, expect, it } from 'vitest';
import { listAudit } from '../../src/core/audit/audit.store.js';
import { bootstrapAdmin, newAgent, uniqueName, type TestAgent } from '../helpers/api.js';
import { useTestServer } from '../helpers/suite.js';

/**
 * A token never reaches beyond its own grant (docs/scopes.md): it issues only tokens whose actions
 * and rooms are subsets of its own, changes the members of its own rooms only, and the audit names
 * the token (prefix) that acted. And an admin lists an agent's tokens, never their secrets.
 */
describe.each(['open', 'strict'] as const)('token grants (%s mode)', (mode) => {
  const t = useTestServer({ config: { authzMode: mode } });
  let root: TestAgent;
  let agent: TestAgent;
  let inside: string;
  let outside: string;
  /** An admin session limited to `inside`, and its token's prefix. */
  let limited: { jwt: string; prefix: string };
  /** An admin session limited to two actions (every room). */
  let fewActions: { jwt: string; prefix: string };

  const db = () => t.server.app.ctx.database.db;
  const createRoom = async (): Promise<string> => {
    const res = await t.api.post('/rooms', { slug: uniqueName('grant'), name: 'grant' }, { jwt: root.jwt });
    expect(res.status).toBe(201);
    return res.body.id;
  };
  const session = async (agentId: string, scopes: Record<string, unknown>): Promise<{ jwt: string; prefix: string; token: string }> => {
    const issued = await t.api.post(`/api/v1/agents/${agentId}/tokens`, { scopes }, { jwt: root.jwt });
    expect(issued.status).toBe(201);
    const exchanged = await t.api.exchange(issued.body.token);
    expect(exchanged.status).toBe(201);
    return { jwt: exchanged.body.token, prefix: issued.body.prefix, token: issued.body.token };
  };

  beforeAll(async () => {
    root = await bootstrapAdmin(db(), t.api);
    agent = await newAgent(t.api, { asJwt: root.jwt });
    inside = await createRoom();
    outside = await createRoom();
    limited = await session(root.id, { rooms: [inside] });
    fewActions = await session(root.id, { actions: ['admin', 'messages:read'] });
  });

  describe('issuing', () => {
    it('refuses a token wider than the caller\'s rooms: none named, or one outside (403, details)', async () => {
      for (const [who, scopes] of [[root.id, {}], [agent.id, {}], [root.id, { rooms: [inside, outside] }], [root.id, { actions: ['admin'] }]] as const) {
        const res = await t.api.post(`/api/v1/agents/${who}/tokens`, { scopes }, { jwt: limited.jwt });
        expect(res.status, JSON.stringify(scopes)).toBe(403);
        expect(res.body.error).toMatch(/wider/);
        expect(Object.keys(res.body.details)).toEqual(['scopes.rooms']);
      }
      // Upper case is the same room: still within.
      const within = await t.api.post(`/api/v1/agents/${agent.id}/tokens`, { scopes: { rooms: [inside.toUpperCase()], actions: ['messages:read'] } }, { jwt: limited.jwt });
      expect(within.status).toBe(201);
      expect((await t.api.post(`/api/v1/agents/${root.id}/tokens`, { scopes: { rooms: [] } }, { jwt: limited.jwt })).status).toBe(201);
    });

    it('refuses a token wider than the caller\'s actions (403, details naming the extra ones)', async () => {
      const unnamed = await t.api.post(`/api/v1/agents/${root.id}/tokens`, { scopes: { rooms: [inside] } }, { jwt: fewActions.jwt });
      expect(unnamed.status).toBe(403);
      expect(Object.keys(unnamed.body.details)).toEqual(['scopes.actions']);
      const extra = await t.api.post(`/api/v1/agents/${root.id}/tokens`, { scopes: { actions: ['admin', 'messages:write'] } }, { jwt: fewActions.jwt });
      expect(extra.status).toBe(403);
      expect(extra.body.details['scopes.actions']).toContain('messages:write');
      const subset = await t.api.post(`/api/v1/agents/${agent.id}/tokens`, { scopes: { actions: ['messages:read'], rooms: [outside] } }, { jwt: fewActions.jwt });
      expect(subset.status).toBe(201);
    });

    it('an unrestricted session issues any token, as before', async () => {
      expect((await t.api.post(`/api/v1/agents/${agent.id}/tokens`, {}, { jwt: root.jwt })).status).toBe(201);
    });
  });

  describe('member changes', () => {
    it('refuses adding or removing a member of a room outside the token\'s rooms (403), within them works', async () => {
      const add = await t.api.post(`/rooms/${outside}/members`, { agentId: agent.id }, { jwt: limited.jwt });
      expect(add.status).toBe(403);
      expect((await t.api.get(`/api/v1/rooms/${outside}/members`, { jwt: root.jwt })).body.members.map((m: { agentId: string }) => m.agentId)).not.toContain(agent.id);

      expect((await t.api.post(`/rooms/${outside}/members`, { agentId: agent.id }, { jwt: root.jwt })).status).toBe(201);
      expect((await t.api.delete(`/rooms/${outside}/members/${agent.id}`, { jwt: limited.jwt })).status).toBe(403);
      expect((await t.api.get(`/api/v1/rooms/${outside}/members`, { jwt: root.jwt })).body.members.map((m: { agentId: string }) => m.agentId)).toContain(agent.id);

      // An unknown room is 404 as everywhere; the grant is checked before the agent is looked up.
      const unknownRoom = '00000000-0000-7000-8000-000000000000';
      expect((await t.api.post(`/rooms/${unknownRoom}/members`, { agentId: agent.id }, { jwt: limited.jwt })).status).toBe(404);
      expect((await t.api.delete(`/rooms/${outside}/members/${unknownRoom}`, { jwt: limited.jwt })).status).toBe(403);

      expect((await t.api.post(`/rooms/${inside}/members`, { agentId: agent.id }, { jwt: limited.jwt })).status).toBe(201);
      expect((await t.api.delete(`/rooms/${inside}/members/${agent.id}`, { jwt: limited.jwt })).status).toBe(204);
    });

    it('names the acting token\'s prefix in the audit records (never its secret)', async () => {
      const room = inside;
      const other = await newAgent(t.api, { asJwt: root.jwt });
      expect((await t.api.post(`/rooms/${room}/members`, { agentId: other.id }, { jwt: limited.jwt })).status).toBe(201);
      expect((await t.api.delete(`/rooms/${room}/members/${other.id}`, { jwt: limited.jwt })).status).toBe(204);
      const issued = await t.api.post(`/api/v1/agents/${other.id}/tokens`, { scopes: { rooms: [room] } }, { jwt: limited.jwt });
      expect(issued.status).toBe(201);
      expect((await t.api.delete(`/api/v1/tokens/${issued.body.prefix}`, { jwt: limited.jwt })).status).toBe(204);

      const added = (await listAudit(db(), 'member-added')).find((r) => r.detail.agentId === other.id);
      const removed = (await listAudit(db(), 'member-removed')).find((r) => r.detail.agentId === other.id);
      const tokenIssued = (await listAudit(db(), 'token-issued')).find((r) => r.detail.prefix === issued.body.prefix);
      const tokenRevoked = (await listAudit(db(), 'token-revoked')).find((r) => r.detail.prefix === issued.body.prefix);
      for (const record of [added, removed, tokenIssued, tokenRevoked]) {
        expect(record?.actorId).toBe(root.id);
        expect(record?.detail.actorToken).toBe(limited.prefix);
      }
      expect(JSON.stringify([added, removed, tokenIssued, tokenRevoked])).not.toContain(issued.body.token.split('_')[2]);
    });
  });

  describe('GET /api/v1/agents/:id/tokens', () => {
    it('lists an agent\'s tokens, revoked ones included, with lastUsedAt, and never a secret or hash', async () => {
      const subject = await newAgent(t.api, { asJwt: root.jwt });
      const second = await session(subject.id, { actions: ['messages:read'] });
      expect((await t.api.delete(`/api/v1/tokens/${second.prefix}`, { jwt: root.jwt })).status).toBe(204);
      const unused = await t.api.post(`/api/v1/agents/${subject.id}/tokens`, { expiresAt: '2099-01-01T00:00:00.000Z' }, { jwt: root.jwt });

      const res = await t.api.get(`/api/v1/agents/${subject.id}/tokens`, { jwt: root.jwt });
      expect(res.status).toBe(200);
      expect(Object.keys(res.body)).toEqual(['tokens']);
      const tokens = res.body.tokens as Record<string, unknown>[];
      expect(tokens.map((tk) => tk.prefix)).toEqual([subject.prefix, second.prefix, unused.body.prefix]);
      for (const token of tokens) {
        expect(Object.keys(token).sort()).toEqual(['createdAt', 'expiresAt', 'id', 'kind', 'lastUsedAt', 'prefix', 'revokedAt', 'scopes']);
      }
      const [first, revoked, fresh] = tokens;
      expect(first!.revokedAt).toBeNull();
      expect(first!.lastUsedAt).toMatch(/^\d{4}-\d{2}-\d{2}T/);
      expect(revoked!.revokedAt).toMatch(/^\d{4}-\d{2}-\d{2}T/);
      expect(revoked!.scopes).toEqual({ actions: ['messages:read'] });
      expect(fresh!.lastUsedAt).toBeNull();
      expect(fresh!.expiresAt).toBe('2099-01-01T00:00:00.000Z');
      const text = JSON.stringify(res.body);
      for (const secret of [subject.apiToken, second.token, unused.body.token]) expect(text).not.toContain(secret.split('_')[2]);
      expect(text).not.toContain('argon2');
    });

    it('records lastUsedAt at most once a minute per token', async () => {
      const subject = await newAgent(t.api, { asJwt: root.jwt });
      const read = async () => (await t.api.get(`/api/v1/agents/${subject.id}/tokens`, { jwt: root.jwt })).body.tokens[0].lastUsedAt as string;
      const first = await read();
      expect((await t.api.exchange(subject.apiToken)).status).toBe(201);
      expect(await read()).toBe(first);
      // Pushed back more than a minute: the next exchange records itself again.
      const old = new Date(Date.now() - 120_000).toISOString();
      await db().updateTable('api_tokens').set({ last_used_at: old }).where('prefix', '=', subject.prefix).execute();
      expect((await t.api.exchange(subject.apiToken)).status).toBe(201);
      expect(new Date(await read()).getTime()).toBeGreaterThan(new Date(old).getTime() + 60_000);
    });

    it('is for admins only: 401 anonymous, 403 an agent or a token without admin, 404 an unknown agent, 400 a malformed id', async () => {
      expect((await t.api.get(`/api/v1/agents/${agent.id}/tokens`)).status).toBe(401);
      expect((await t.api.get(`/api/v1/agents/${agent.id}/tokens`, { jwt: agent.jwt })).status).toBe(403);
      const noAdmin = await session(root.id, { actions: ['messages:read'] });
      expect((await t.api.get(`/api/v1/agents/${agent.id}/tokens`, { jwt: noAdmin.jwt })).status).toBe(403);
      expect((await t.api.get('/api/v1/agents/00000000-0000-7000-8000-000000000000/tokens', { jwt: root.jwt })).status).toBe(404);
      expect((await t.api.get('/api/v1/agents/nope/tokens', { jwt: root.jwt })).status).toBe(400);
    });
  });
});
