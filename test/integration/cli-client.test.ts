import { beforeAll, describe, expect, it } from 'vitest';
import { newAdmin, newAgent, newRoom, sendMessage, uniqueName, type TestAgent } from '../helpers/api.js';
import { CLI_JS, ensureBuilt } from '../helpers/build.js';
import { runAms, type CliResult } from '../helpers/cli.js';
import { spawnProcess } from '../helpers/processes.js';
import { useTestServer } from '../helpers/suite.js';
import { waitUntil } from '../helpers/wait.js';

// The `ams` client commands (docs/client.md) end to end: the built CLI against a running server.

describe('ams client commands', { timeout: 120_000 }, () => {
  const t = useTestServer();
  let admin: TestAgent;
  beforeAll(async () => {
    await ensureBuilt();
    admin = await newAdmin(t.api);
  }, 180_000);

  /** `ams <args>` with AMS_URL and the given token in the environment (and nothing else but PATH). */
  const ams = (token: string | undefined, ...args: string[]): Promise<CliResult> =>
    runAms({ AMS_URL: t.server.url, ...(token === undefined ? {} : { AMS_API_TOKEN: token }) }, ...args);
  const ok = async (token: string, ...args: string[]): Promise<string> => {
    const res = await ams(token, ...args);
    expect(res, args.join(' ')).toMatchObject({ code: 0, stderr: '' });
    return res.stdout;
  };

  it('agents, tokens, rooms, send, search, inbox and read, with names and slugs for ids', async () => {
    const name = uniqueName('cli');
    const created = JSON.parse(await ok(admin.apiToken, 'agents', 'create', '--name', name, '--display-name', 'Cli Agent')) as { id: string; role: string };
    expect(created).toMatchObject({ role: 'agent' });
    const listed = JSON.parse(await ok(admin.apiToken, '--json', 'agents', 'list')) as { id: string }[];
    expect(listed.map((a) => a.id)).toContain(created.id);
    expect(await ok(admin.apiToken, 'agents', 'list')).toMatch(new RegExp(`${created.id}\\s+${name}\\s+agent\\s+active\\s+Cli Agent`));

    // tokens issue by name; the token works for the agent's own commands.
    const token = JSON.parse(await ok(admin.apiToken, 'tokens', 'issue', name)) as { token: string; prefix: string };
    expect(token.token).toMatch(/^agt_/);

    const slug = uniqueName('cli-room');
    const room = JSON.parse(await ok(admin.apiToken, 'rooms', 'create', slug, '--name', 'CLI room')) as { id: string; slug: string };
    expect(room.slug).toBe(slug);
    expect(await ok(admin.apiToken, 'rooms', 'add-member', slug, name)).toBe(`added ${name} to ${slug}\n`);
    expect(await ok(token.token, 'rooms', 'list')).toContain(slug);

    // Options anywhere; the text may be several words.
    expect(await ok(token.token, 'send', '--json', slug, 'hello', 'from the command line')).toContain('"body": "hello from the command line"');
    expect(await ok(token.token, 'send', room.id, 'second')).toBe(`sent #2 to ${slug}\n`);
    expect(await ok(admin.apiToken, 'search', 'command', '--room', slug)).toMatch(new RegExp(`${slug} #1 ${name}: hello from the command line`));

    const inbox = await ok(admin.apiToken, 'inbox', '--wait', '1');
    expect(inbox).toContain(`${slug} #1 ${name}: hello from the command line`);
    expect(inbox).toContain(`${slug} #2 ${name}: second`);
    expect(await ok(admin.apiToken, 'read', slug, '2')).toBe(`${slug}: read up to #2, 0 unread\n`);
    expect(JSON.parse(await ok(admin.apiToken, 'inbox', '--json'))).toEqual({ messages: [], hasMore: false, unreadTotal: 0, attentionTotal: 0 });
    expect(await ok(admin.apiToken, 'inbox')).toBe('nothing unread\n');

    expect(await ok(admin.apiToken, 'rooms', 'remove-member', slug, created.id)).toBe(`removed ${created.id} from ${slug}\n`);
    expect(await ok(admin.apiToken, 'tokens', 'revoke', token.prefix)).toBe(`revoked ${token.prefix}\n`);
    expect(await ams(token.token, 'rooms', 'list')).toMatchObject({ code: 1, stderr: expect.stringMatching(/^ams: .+\n$/) });
  });

  it('tokens AGENT lists the tokens without secrets; an agent cannot', async () => {
    const agent = await newAgent(t.api);
    const issued = JSON.parse(await ok(admin.apiToken, 'tokens', 'issue', agent.name, '--expires-at', '2099-01-01T00:00:00.000Z')) as { token: string; prefix: string };
    await ok(admin.apiToken, 'tokens', 'revoke', issued.prefix);
    const table = await ok(admin.apiToken, 'tokens', agent.name);
    expect(table.split('\n')[0]).toMatch(/^PREFIX\s+STATE\s+CREATED\s+LAST USED\s+EXPIRES\s+SCOPES$/);
    expect(table).toMatch(new RegExp(`${agent.prefix}\\s+active\\s+\\S+\\s+\\d{4}-`));
    expect(table).toMatch(new RegExp(`${issued.prefix}\\s+revoked\\s+\\S+\\s+-\\s+2099-01-01T00:00:00.000Z`));
    const listed = JSON.parse(await ok(admin.apiToken, 'tokens', agent.id, '--json')) as { prefix: string }[];
    expect(listed.map((tk) => tk.prefix)).toEqual([agent.prefix, issued.prefix]);
    const all = table + JSON.stringify(listed);
    for (const secret of [agent.apiToken, issued.token]) expect(all).not.toContain(secret.split('_')[2]);
    expect(await ams(agent.apiToken, 'tokens', agent.id)).toMatchObject({ code: 1, stderr: expect.stringMatching(/^ams: .+\n$/) });
  });

  it('tail prints the last 20 messages, then follows live; --json gives one object a line', async () => {
    const agent = await newAgent(t.api);
    const room = await newRoom(t.api, admin, [agent]);
    const sent: string[] = [];
    for (let i = 0; i < 25; i++) sent.push((await sendMessage(t.api, admin, room.id, `old ${i}`)).id);
    const tail = spawnProcess({ name: 'ams tail', argv: [process.execPath, CLI_JS, 'tail', room.slug, '--json'], env: { PATH: process.env.PATH ?? '', AMS_URL: t.server.url, AMS_API_TOKEN: agent.apiToken } });
    try {
      const lines = (): { id: string; seq: number; body: string }[] => tail.output('stdout').split('\n').filter((l) => l !== '').map((l) => JSON.parse(l));
      await waitUntil('the backlog printed', () => lines().length >= 20, 30_000);
      // Connected once the client is subscribed: the agent shows online.
      await waitUntil('tail connected', async () => (await t.api.get(`/api/v1/rooms/${room.id}/members`, { jwt: admin.jwt })).body.members.some((m: { agentId: string; online: boolean }) => m.agentId === agent.id && m.online));
      for (let i = 0; i < 3; i++) sent.push((await sendMessage(t.api, admin, room.id, `live ${i}`)).id);
      await waitUntil('the live ones printed', () => lines().length >= 23, 30_000);
      expect(lines().map((m) => m.id)).toEqual(sent.slice(5));
      expect(lines()[0]).toMatchObject({ seq: 6, body: 'old 5' });
      tail.child.kill('SIGINT');
      expect((await tail.exit).code).toBe(0);
    } finally {
      await tail.kill();
    }
  });

  it('errors: one `ams:` line on stderr, exit 1 for a failure and 2 for a usage mistake; --help per command', async () => {
    const room = await newRoom(t.api, admin);
    expect(await ams(admin.apiToken, 'send', 'no-such-room', 'x')).toEqual({ code: 1, stdout: '', stderr: 'ams: room "no-such-room" not found\n' });
    expect(await ams(admin.apiToken, 'agents', 'create', '--name', 'Not Valid')).toEqual({ code: 1, stdout: '', stderr: 'ams: --name must match pattern ^[a-z0-9][a-z0-9-]{0,63}$\n' });
    expect(await ams(admin.apiToken, 'tokens', 'revoke', 'agt_000000000000')).toMatchObject({ code: 1, stderr: 'ams: Token not found\n' });
    expect(await ams('agt_000000000000_' + '0'.repeat(64), 'rooms', 'list')).toMatchObject({ code: 1, stderr: expect.stringMatching(/^ams: [^\n]+\n$/) });
    const usage: [string[], string][] = [
      [['rooms', 'list'], 'rooms list needs --token <API token> or AMS_API_TOKEN'],
      [['read', room.slug, 'x'], 'SEQ must be a whole number'],
      [['send', room.slug], 'send needs ROOM TEXT...'],
      [['tokens', 'revoke', 'a', 'b'], 'tokens revoke takes PREFIX only'],
      [['agents', 'create', '--name', 'x', '--role', 'boss'], '--role must be admin or agent'],
      [['inbox', '--wait', '99'], '--wait must be a whole number from 0 to 30'],
      [['rooms', 'list', '--wait', '1'], 'rooms list takes no --wait'],
    ];
    for (const [args, message] of usage) {
      const token = args[0] === 'rooms' && args.length === 2 ? undefined : admin.apiToken;
      expect(await ams(token, ...args), args.join(' ')).toEqual({ code: 2, stdout: '', stderr: `ams: ${message} (ams --help for usage)\n` });
    }
    const help = await ams(undefined, 'tail', '--help');
    expect(help).toMatchObject({ code: 0, stderr: '' });
    expect(help.stdout).toContain('Usage: ams tail ROOM [--json]');
    const all = await ams(undefined, '--help');
    for (const command of ['agents list', 'agents create', 'tokens issue', 'tokens revoke', 'tokens AGENT', 'rooms list', 'rooms create', 'rooms add-member', 'rooms remove-member', 'send ROOM', 'tail ROOM', 'inbox', 'read ROOM SEQ', 'search QUERY', 'serve', 'admin create']) {
      expect(all.stdout).toContain(command);
    }
  });
});
