import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt, ROOT } from '../helpers/build.js';
import { Api, newAdmin, newRoom } from '../helpers/api.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

// The README's examples are the scripts in examples/: the README shows them (or excerpts of them)
// verbatim, and these tests run them against a real server on a fresh database.

const run = promisify(execFile);

/** Runs an example with the server's address and database (for `ams`), from the repository root. */
async function runExample(server: TestServer, command: string, args: string[]): Promise<string> {
  const { stdout } = await run(command, args, {
    cwd: ROOT,
    env: { ...process.env, AMS_URL: server.url, DATABASE_URL: server.db.url },
    timeout: 120_000,
  });
  return stdout;
}

/** The fenced code blocks of `markdown` whose language is one a reader would run. */
function runnableBlocks(markdown: string): { lang: string; code: string }[] {
  return [...markdown.matchAll(/^```(\w*)[^\n]*\n([\s\S]*?)^```[ \t]*$/gm)]
    .map((m) => ({ lang: m[1]!, code: m[2]! }))
    .filter((b) => ['sh', 'bash', 'shell', 'console', 'js', 'mjs', 'javascript', 'ts', 'typescript'].includes(b.lang));
}

describe('the README examples', () => {
  let server: TestServer | undefined;
  beforeAll(ensureBuilt, 180_000);
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('every shell or JavaScript block of the README is an excerpt of a script in examples/', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const scripts = readdirSync(join(ROOT, 'examples')).map((f) => readFileSync(join(ROOT, 'examples', f), 'utf8'));
    const blocks = runnableBlocks(readme);
    // The walk-through is shown whole.
    expect(blocks.map((b) => b.code)).toContain(readFileSync(join(ROOT, 'examples', 'walkthrough.sh'), 'utf8'));
    const strays = blocks.filter((b) => !scripts.some((s) => s.includes(b.code)));
    expect(strays.map((b) => b.code)).toEqual([]);
  });

  for (const authzMode of ['open', 'strict'] as const) {
    it(`walkthrough.sh runs to the end in ${authzMode} mode`, async () => {
      server = await startTestServer({ config: { authzMode } });
      const out = await runExample(server, 'sh', ['examples/walkthrough.sh']);
      const lines = out.trim().split('\n');
      expect(lines[0]).toMatch(/^session expires at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.000Z$/);
      expect(JSON.parse(lines[1]!)).toMatchObject({ body: 'Hello, room!', roomId: expect.any(String), senderId: expect.any(String) });
      expect(JSON.parse(lines[2]!)).toMatchObject({ body: 'Second message' });
      expect(lines.slice(3)).toEqual([
        'page 1: Second message, hasMore true',
        'page 2: Hello, room!, hasMore false',
        'revoke: 204',
        'exchange after revocation: 401',
      ]);
    }, 120_000);
  }

  it('catch-up.sh: the inbox waits for a message from someone else, marking it read empties it, search finds it', async () => {
    server = await startTestServer();
    const started = Date.now();
    const out = await runExample(server, 'sh', ['examples/catch-up.sh']);
    const [inbox, read, search] = out.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(inbox).toMatchObject({ messages: [{ body: 'Deploy done: Café v2.0 is live', seq: 1 }], hasMore: false, unreadTotal: 1 });
    // The inbox request was held until the message came (about a second after it was sent).
    expect(Date.now() - started).toBeGreaterThan(900);
    expect(read).toMatchObject({ readSeq: 1, unreadCount: 0 });
    expect(search).toMatchObject({ results: [{ body: 'Deploy done: Café v2.0 is live', seq: 1 }], hasMore: false });
  }, 120_000);

  for (const authzMode of ['open', 'strict'] as const) {
    it(`scoped-token.sh: the scoped token reads its room and may not send (${authzMode} mode)`, async () => {
      server = await startTestServer({ config: { authzMode } });
      const [read, refusal] = (await runExample(server, 'sh', ['examples/scoped-token.sh'])).trim().split('\n');
      expect(read).toBe('200');
      expect(JSON.parse(refusal!)).toEqual({ error: 'This token does not grant messages:write', details: { scope: 'messages:write required' } });
    }, 120_000);
  }

  it('websocket.mjs connects, sends, receives, reads the history and shows both kinds of error', async () => {
    server = await startTestServer();
    const out = await runExample(server, process.execPath, ['examples/websocket.mjs']);
    const printed = new Map(
      out
        .trim()
        .split('\n')
        .map((line) => {
          const at = line.indexOf(' {');
          return [line.slice(0, at), JSON.parse(line.slice(at + 1)) as Record<string, unknown>] as const;
        }),
    );
    expect([...printed.keys()].sort()).toEqual(['agent:hello-ack', 'empty body ack', 'error event', 'message:history', 'message:new', 'message:send ack', 'presence:update'].sort());
    const hello = printed.get('agent:hello-ack') as { agentId: string; rooms: string[] };
    expect(hello.rooms).toHaveLength(1);
    expect(printed.get('presence:update')).toEqual({ agentId: hello.agentId, status: 'online' });
    const { messageId } = printed.get('message:send ack') as { messageId: string };
    expect(printed.get('message:new')).toMatchObject({ id: messageId, roomId: hello.rooms[0], authorAgentId: hello.agentId, body: 'Hello, room!' });
    expect(printed.get('message:history')).toMatchObject({ messages: [{ id: messageId, body: 'Hello, room!' }], hasMore: false, cursor: messageId });
    expect(printed.get('empty body ack')).toEqual({ error: { code: 'VALIDATION_ERROR', message: 'Validation failed: body must not be empty' } });
    expect(printed.get('error event')).toEqual({ code: 'ROOM_NOT_FOUND', message: 'Room not found', requestId: 'join-1' });
  }, 60_000);

  it('webhooks.mjs registers an endpoint, receives a signed delivery and verifies it, and reads the log', async () => {
    server = await startTestServer({ config: { webhooks: { retryScheduleSeconds: [1], allowPrivateTargets: true } } });
    const out = await runExample(server, process.execPath, ['examples/webhooks.mjs']);
    const printed = new Map(out.trim().split('\n').map((line) => {
      const at = line.indexOf(' ');
      return [line.slice(0, at), JSON.parse(line.slice(at + 1)) as unknown] as const;
    }));
    expect([...printed.keys()]).toEqual(['registered', 'received', 'deliveries']);
    const registered = printed.get('registered') as { id: string; mode: string; events: string[] };
    expect(registered).toMatchObject({ mode: 'always', events: ['message.created'], disabledAt: null });
    expect(printed.get('received')).toMatchObject({ type: 'message.created', data: { message: { body: 'Ping for the bot', seq: 1 } } });
    expect(printed.get('deliveries')).toEqual([expect.objectContaining({ event: 'message.created', attempt: 1, status: 'delivered', error: null })]);
  }, 60_000);

  it('social.sh: every answer is the one its comment shows', async () => {
    server = await startTestServer();
    const out = await runExample(server, 'sh', ['examples/social.sh']);
    const answers = out
      .trim()
      .split('\n')
      .map((line) => ({ status: Number(line.slice(0, 3)), body: JSON.parse(line.slice(4)) as unknown }));
    const script = readFileSync(join(ROOT, 'examples', 'social.sh'), 'utf8');
    // The calls whose output is printed, in order, each with the status its comment announces.
    const announced = script
      .split('\n')
      .filter((line) => /^call /.test(line) && !line.includes('> /dev/null'))
      .map((line) => /#\s*(\d{3})\b/.exec(line)?.[1]);
    expect(answers.map((a) => String(a.status))).toEqual(announced.map((s) => s ?? expect.stringMatching(/^20[01]$/)));
    const bodies = answers.map((a) => a.body);
    expect(bodies).toContainEqual({ error: 'Channel slug "releases" already exists' });
    expect(bodies).toContainEqual({ error: 'Admin role required' });
    expect(bodies).toContainEqual({ error: 'Validation failed', details: { slug: 'must match pattern ^[a-z0-9-]{1,64}$', name: 'must not be empty' } });
    expect(bodies).toContainEqual({ error: 'Validation failed', details: { before: 'is not the id of a post in this channel' } });
    expect(bodies).toContainEqual({ error: 'Validation failed', details: { limit: 'must be a whole number from 1 to 100' } });
    expect(bodies).toContainEqual({ error: 'Validation failed', details: { emoji: 'must be one of 👍, 🤔, 💡' } });
    expect(bodies).toContainEqual({ error: 'Post not found' });
    expect(bodies).toContainEqual({ error: 'Validation failed', details: { id: 'must be a UUID' } });
    expect(bodies).toContainEqual({ error: 'Authentication required' });
    expect(bodies).toContainEqual({ error: 'Validation failed', details: { role: 'must be one of "admin", "agent"' } });
    expect(bodies).toContainEqual({ error: 'Company not found' });
    expect(bodies).toContainEqual({ reactions: [{ emoji: '👍', count: 2, reactedByMe: true }, { emoji: '💡', count: 1, reactedByMe: false }] });
    expect(bodies.filter((b) => JSON.stringify(b) === JSON.stringify({ action: 'added', emoji: '👍' }))).toHaveLength(2);
    expect(bodies).toContainEqual({ action: 'removed', emoji: '👍' });
    const thread = bodies.find((b): b is { parent: { replyCount: number; id: string }; replies: { parentPostId: string }[] } => typeof b === 'object' && b !== null && 'parent' in b);
    expect(thread?.parent.replyCount).toBe(2);
    expect(thread?.replies.map((r) => r.parentPostId)).toEqual([thread?.parent.id, thread?.parent.id]);
    const directory = bodies.filter((b): b is { companyId: string; total: number } => typeof b === 'object' && b !== null && 'companyId' in b);
    expect(directory.map((d) => d.total)).toEqual([2, 1]);
  }, 180_000);

  it('client-example.mjs (the README\'s "Client library") connects, sends, sees its message once and closes', async () => {
    server = await startTestServer();
    const api = new Api(server.url);
    const admin = await newAdmin(api);
    const room = await newRoom(api, admin);
    const { stdout } = await run(process.execPath, ['examples/client-example.mjs'], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', AMS_URL: server.url, AMS_API_TOKEN: admin.apiToken, AMS_ROOM: room.slug },
      timeout: 60_000,
    });
    const lines = stdout.trim().split('\n');
    expect(lines.filter((l) => l === `#1 ${admin.id}: Hello from the client library`)).toHaveLength(1);
    expect(lines).toContain('sent #1');
    expect(lines).toContain('refused: 400 VALIDATION_ERROR');
    expect(lines.at(-1)).toBe(`position: ${JSON.stringify({ [room.id]: 1 })}`);
  }, 90_000);
});
