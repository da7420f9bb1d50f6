import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt, ROOT } from '../helpers/build.js';
import { Api, newAdmin, newRoom } from '../helpers/api.js';
import { createTestDatabase, startTestServer, type TestServer } from '../helpers/server.js';

// The README's examples are the scripts in examples/: the README shows them (or excerpts of them)
// verbatim, and these tests run each twice against one real server (they name what they create per
// run), and check that a step that fails ends a script with a non-zero exit.

const run = promisify(execFile);

/** Runs an example with the server's address and database (for `ams`), from the repository root. */
async function runExample(server: TestServer, command: string, args: string[], databaseUrl = server.db.url): Promise<string> {
  const { stdout } = await run(command, args, {
    cwd: ROOT,
    env: { ...process.env, AMS_URL: server.url, DATABASE_URL: databaseUrl },
    timeout: 120_000,
  });
  return stdout;
}

/** Runs an example expected to fail: its exit code, output and error output. */
async function runFailing(server: TestServer, script: string, databaseUrl = server.db.url): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    await runExample(server, 'bash', [script], databaseUrl);
  } catch (err) {
    const failed = err as { code?: unknown; stdout?: string; stderr?: string };
    return { code: typeof failed.code === 'number' ? failed.code : -1, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
  }
  return { code: 0, stdout: '', stderr: '' };
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
    it(`walkthrough.sh runs to the end in ${authzMode} mode, twice on one server`, async () => {
      server = await startTestServer({ config: { authzMode } });
      for (let round = 0; round < 2; round++) checkWalkthrough(await runExample(server, 'bash', ['examples/walkthrough.sh']));
    }, 180_000);
  }

  function checkWalkthrough(out: string): void {
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
  }

  it('catch-up.sh: the inbox waits for a message from someone else, marking it read empties it, search finds it (twice on one server)', async () => {
    server = await startTestServer();
    for (let round = 0; round < 2; round++) {
      const started = Date.now();
      const out = await runExample(server, 'bash', ['examples/catch-up.sh']);
      const [inbox, read, search] = out.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
      expect(inbox).toMatchObject({ messages: [{ body: 'Deploy done: Café v2.0 is live', seq: 1 }], hasMore: false, unreadTotal: 1 });
      // The inbox request was held until the message came (about a second after it was sent).
      expect(Date.now() - started).toBeGreaterThan(900);
      expect(read).toMatchObject({ readSeq: 1, unreadCount: 0 });
      expect(search).toMatchObject({ results: [{ body: 'Deploy done: Café v2.0 is live', seq: 1 }], hasMore: false });
    }
  }, 180_000);

  for (const authzMode of ['open', 'strict'] as const) {
    it(`scoped-token.sh: the scoped token reads its room and may not send (${authzMode} mode, twice on one server)`, async () => {
      server = await startTestServer({ config: { authzMode } });
      for (let round = 0; round < 2; round++) {
        const [read, refusal] = (await runExample(server, 'bash', ['examples/scoped-token.sh'])).trim().split('\n');
        expect(read).toBe('200');
        expect(JSON.parse(refusal!)).toEqual({ error: 'This token does not grant messages:write', details: { scope: 'messages:write required' } });
      }
    }, 180_000);
  }

  it('websocket.mjs connects, sends, receives, reads the history and shows both kinds of error', async () => {
    server = await startTestServer();
    // Twice on one server: the second run makes agents and a room of its own.
    for (let round = 0; round < 2; round++) checkWebsocket(await runExample(server, process.execPath, ['examples/websocket.mjs']));
  }, 90_000);

  function checkWebsocket(out: string): void {
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
  }

  it('webhooks.mjs registers an endpoint, receives a signed delivery and verifies it, and reads the log', async () => {
    server = await startTestServer({ config: { webhooks: { retryScheduleSeconds: [1], allowPrivateTargets: true } } });
    for (let round = 0; round < 2; round++) checkWebhooks(await runExample(server, process.execPath, ['examples/webhooks.mjs']));
  }, 90_000);

  function checkWebhooks(out: string): void {
    const printed = new Map(out.trim().split('\n').map((line) => {
      const at = line.indexOf(' ');
      return [line.slice(0, at), JSON.parse(line.slice(at + 1)) as unknown] as const;
    }));
    expect([...printed.keys()]).toEqual(['registered', 'received', 'deliveries']);
    const registered = printed.get('registered') as { id: string; mode: string; events: string[] };
    expect(registered).toMatchObject({ mode: 'always', events: ['message.created'], disabledAt: null });
    expect(printed.get('received')).toMatchObject({ type: 'message.created', data: { message: { body: 'Ping for the bot', seq: 1 } } });
    expect(printed.get('deliveries')).toEqual([expect.objectContaining({ event: 'message.created', attempt: 1, status: 'delivered', error: null })]);
  }

  it('a2a-client.mjs resolves a card, streams a task and sees each move the agent makes over REST', async () => {
    server = await startTestServer();
    for (let round = 0; round < 2; round++) {
      const lines = (await runExample(server, process.execPath, ['examples/a2a-client.mjs'])).trim().split('\n');
      expect(lines.map((line) => line.slice(0, line.indexOf(' ')))).toEqual(['card', 'task', 'update', 'update']);
      const [card, task, working, completed] = lines.map((line) => JSON.parse(line.slice(line.indexOf(' ') + 1)) as Record<string, unknown>);
      expect(card).toMatchObject({ name: 'Translator', streaming: true, url: expect.stringMatching(new RegExp(`^${server.url}/a2a/translator-`)) });
      expect(task).toEqual({ state: 'TASK_STATE_SUBMITTED', title: 'Translate into French' });
      expect(working).toEqual({ state: 'TASK_STATE_WORKING', text: 'Translating' });
      expect(completed).toEqual({ state: 'TASK_STATE_COMPLETED', text: 'Bonjour le monde' });
    }
  }, 60_000);

  it('social.sh: every answer is the one its comment shows, twice on one server', async () => {
    server = await startTestServer();
    for (let round = 1; round <= 2; round++) checkSocial(await runExample(server, 'bash', ['examples/social.sh']), round);
  }, 240_000);

  function checkSocial(out: string, round: number): void {
    const answers = out
      .trim()
      .split('\n')
      .map((line) => ({ status: Number(line.slice(0, 3)), body: JSON.parse(line.slice(4)) as unknown }));
    const script = readFileSync(join(ROOT, 'examples', 'social.sh'), 'utf8');
    // The calls whose output is printed, in order, each with the status its comment announces.
    const announced = script
      .split('\n')
      .filter((line) => /^call /.test(line) && !line.includes('> /dev/null'))
      .map((line) => /^call (\d{3}) /.exec(line)?.[1]);
    expect(answers.map((a) => String(a.status))).toEqual(announced);
    const bodies = answers.map((a) => a.body);
    expect(bodies).toContainEqual({ error: expect.stringMatching(/^Channel slug "releases-\d+-\d+" already exists$/) });
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
    // Each run adds an admin and an agent.
    expect(directory.map((d) => d.total)).toEqual([2 * round, round]);
  }

  it('a step that fails ends a script with a non-zero exit: an admin made in another database, a refused call', async () => {
    server = await startTestServer();
    // Another database than the server's, as with DATABASE_URL forgotten: `ams` makes the admin
    // there, and the server refuses its token (401).
    const other = await createTestDatabase();
    try {
      await run(process.execPath, ['dist/cli/main.js', 'migrate'], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', DATABASE_URL: other.url } });
      for (const script of ['examples/walkthrough.sh', 'examples/social.sh', 'examples/scoped-token.sh']) {
        const failed = await runFailing(server, script, other.url);
        expect(failed.code, script).not.toBe(0);
        expect(failed.stderr, script).toMatch(/401/);
        expect(failed.stdout, script).not.toMatch(/^20\d /m);
      }
    } finally {
      await other.drop();
    }
    // In strict mode nobody may create agents without an admin JWT: catch-up.sh's first call is refused.
    await server.close();
    server = await startTestServer({ config: { authzMode: 'strict' } });
    const refused = await runFailing(server, 'examples/catch-up.sh');
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/401/);
    expect(refused.stdout).toBe('');
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
