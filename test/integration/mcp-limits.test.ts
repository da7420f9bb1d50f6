import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/errors.js';
import { newAdmin, newAgent, newRoom, sendMessage, type TestAgent } from '../helpers/api.js';
import { useTestServer } from '../helpers/suite.js';
import { waitUntil } from '../helpers/wait.js';

// docs/mcp.md: a JSON-RPC batch costs a rate-limit point per call, and long-poll waits (inbox over
// REST, fetch_inbox over MCP) share one cap per agent (WAITS_PER_AGENT); tools/call with malformed
// params is -32602 without the schema library's internals.

const HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' };

interface RpcAnswer {
  status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read arbitrary JSON-RPC answers
  body: any;
}

async function rpc(url: string, bearer: string, body: unknown): Promise<RpcAnswer> {
  const res = await fetch(`${url}/mcp`, { method: 'POST', headers: { ...HEADERS, authorization: `Bearer ${bearer}` }, body: JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text === '' ? undefined : JSON.parse(text) };
}

const toolCall = (id: number, name: string, args: unknown) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });

describe('/mcp batches pay per call', () => {
  const PER_MINUTE = 150;
  const t = useTestServer({ config: { rateLimit: { anonPerMinute: 10_000, agentPerMinute: PER_MINUTE } } });

  it('8 batched POSTs of 100 send_message calls send no more messages than the per-minute limit', async () => {
    const admin = await newAdmin(t.api);
    const agent = await newAgent(t.api, { asJwt: admin.jwt });
    const room = await newRoom(t.api, admin, [agent]);
    const statuses: number[] = [];
    for (let post = 0; post < 8; post++) {
      const batch = Array.from({ length: 100 }, (_, i) => toolCall(post * 100 + i, 'send_message', { room: room.id, body: `m ${post}.${i}` }));
      statuses.push((await rpc(t.server.url, agent.apiToken, batch)).status);
    }
    const { db } = t.server.app.ctx.database;
    const row = await db.selectFrom('messages').select((eb) => eb.fn.countAll<number | string>().as('n')).where('room_id', '=', room.id).executeTakeFirstOrThrow();
    const sent = Number(row.n);
    expect(statuses[0]).toBe(200);
    expect(statuses).toContain(429);
    expect(sent).toBeGreaterThan(0);
    expect(sent).toBeLessThanOrEqual(PER_MINUTE);
    // The batches spent the agent's budget: its next single call is refused too.
    expect((await rpc(t.server.url, agent.apiToken, toolCall(1, 'whoami', {}))).status).toBe(429);
  });
});

describe('long-poll waits per agent', () => {
  const CAP = 2;
  const t = useTestServer({ config: { waitsPerAgent: CAP } });

  it('an agent holds at most the cap of waits, REST and MCP alike: the next is 429, the held ones still answer', async () => {
    const admin = await newAdmin(t.api);
    const reader: TestAgent = await newAgent(t.api);
    const writer: TestAgent = await newAgent(t.api);
    const room = await newRoom(t.api, admin, [reader, writer]);
    const waits = t.server.app.ctx.limits.waits;

    // One held over REST, one over MCP: both take the reader's slots.
    const overRest = t.api.get('/api/v1/inbox?wait=20', { jwt: reader.jwt });
    const overMcp = rpc(t.server.url, reader.apiToken, toolCall(1, 'fetch_inbox', { wait_seconds: 20 }));
    await waitUntil('both waits held', () => waits.heldBy(reader.id) === CAP);

    const refusedRest = await t.api.get('/api/v1/inbox?wait=5', { jwt: reader.jwt });
    expect(refusedRest.status).toBe(429);
    expect(refusedRest.body.error).toMatch(/^Too many waiting requests for this agent \(at most 2 at once\)/);
    const refusedMcp = await rpc(t.server.url, reader.apiToken, toolCall(2, 'fetch_inbox', { wait_seconds: 5 }));
    expect(refusedMcp.status).toBe(200);
    expect(refusedMcp.body.result).toMatchObject({ isError: true, content: [{ type: 'text', text: expect.stringMatching(/^RATE_LIMITED: Too many waiting requests/) }] });
    // Asking without waiting is not a wait; another agent's waits are its own.
    expect((await t.api.get('/api/v1/inbox', { jwt: reader.jwt })).status).toBe(200);
    const otherWait = t.api.get('/api/v1/inbox?wait=20', { jwt: writer.jwt });
    await waitUntil('the writer waits too', () => waits.heldBy(writer.id) === 1);
    expect(waits.heldBy(reader.id)).toBe(CAP);

    const sent = await sendMessage(t.api, writer, room.id, 'work');
    const [rest, mcp] = await Promise.all([overRest, overMcp]);
    expect(rest.status).toBe(200);
    expect(rest.body.messages).toMatchObject([{ id: sent.id, body: 'work' }]);
    expect(mcp.body.result.structuredContent.messages).toMatchObject([{ id: sent.id, body: 'work' }]);
    expect(waits.heldBy(reader.id)).toBe(0);

    // At the cap, a request that finds something unread answers it: only one that would wait is refused.
    const held = [waits.acquire(reader.id), waits.acquire(reader.id)];
    const unread = await t.api.get('/api/v1/inbox?wait=5', { jwt: reader.jwt });
    expect(unread.status).toBe(200);
    expect(unread.body.messages).toMatchObject([{ id: sent.id }]);
    for (const release of held) release();

    await sendMessage(t.api, reader, room.id, 'for the writer');
    expect((await otherWait).body.messages).toMatchObject([{ body: 'for the writer' }]);
    expect(waits.heldBy(writer.id)).toBe(0);
  });

  it('a batch of fetch_inbox waits takes the slots one by one: beyond the cap each call is RATE_LIMITED', async () => {
    const admin = await newAdmin(t.api);
    const [reader, writer] = [await newAgent(t.api), await newAgent(t.api)];
    const room = await newRoom(t.api, admin, [reader, writer]);
    // The calls beyond the cap find nothing unread and are refused; the wake is sent only once they
    // have answered (on a slow database their read could otherwise see it and answer it instead).
    const inbox = t.server.app.ctx.inbox;
    const fetch = inbox.fetch.bind(inbox);
    let refused = 0;
    inbox.fetch = (principal, query, signal) => fetch(principal, query, signal).catch((err: unknown) => {
      if (principal?.agentId === reader.id && err instanceof AppError && err.code === 'RATE_LIMITED') refused++;
      throw err;
    });
    try {
      const batch = rpc(t.server.url, reader.apiToken, Array.from({ length: 5 }, (_, i) => toolCall(i, 'fetch_inbox', { wait_seconds: 20 })));
      await waitUntil('the cap of waits held, the others refused', () => t.server.app.ctx.limits.waits.heldBy(reader.id) === CAP && refused === 5 - CAP);
      await sendMessage(t.api, writer, room.id, 'wake');
      const answers = (await batch).body as { result: { isError?: boolean; content: { text: string }[] } }[];
      expect(answers).toHaveLength(5);
      expect(answers.filter((a) => a.result.isError === true).map((a) => a.result.content[0]!.text)).toEqual(Array(5 - CAP).fill(expect.stringMatching(/^RATE_LIMITED: /)));
      expect(answers.filter((a) => a.result.isError !== true)).toHaveLength(CAP);
    } finally {
      inbox.fetch = fetch;
    }
  });
});

describe('/mcp tools/call with malformed params', () => {
  const t = useTestServer();

  it('arguments as an array (or params not an object) is -32602, saying which field, with no library internals', async () => {
    const agent = await newAgent(t.api);
    const cases: [unknown, RegExp][] = [
      [toolCall(1, 'whoami', []), /"params\.arguments" must be an object/],
      [toolCall(2, 'send_message', ['room', 'body']), /"params\.arguments" must be an object/],
      [{ jsonrpc: '2.0', id: 3, method: 'tools/call', params: ['whoami'] }, /"params" must be an object/],
      [{ jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 7 } }, /"params\.name" must be the name of a tool/],
    ];
    for (const [request, message] of cases) {
      const answer = await rpc(t.server.url, agent.apiToken, request);
      expect(answer.status).toBe(200);
      expect(answer.body).toEqual({ jsonrpc: '2.0', id: (request as { id: number }).id, error: { code: -32602, message: expect.stringMatching(message) } });
      expect(JSON.stringify(answer.body)).not.toMatch(/zod|expected|received|invalid_type|"path"|\n/i);
    }
  });

  it('in a batch, the malformed call is refused and the others are answered', async () => {
    const agent = await newAgent(t.api);
    const answer = await rpc(t.server.url, agent.apiToken, [toolCall(1, 'whoami', []), toolCall(2, 'whoami', {})]);
    expect(answer.status).toBe(200);
    const byId = new Map((answer.body as { id: number }[]).map((a) => [a.id, a]));
    expect(byId.get(1)).toMatchObject({ error: { code: -32602 } });
    expect(byId.get(2)).toMatchObject({ result: { structuredContent: { agentId: agent.id } } });
  });
});
