import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AmsClient } from '../../packages/client/src/index.js';
import { newAdmin, newAgent, newRoom, type TestAgent, type TestRoom } from '../helpers/api.js';
import { CLI_JS, ensureBuilt } from '../helpers/build.js';
import { useTestServer } from '../helpers/suite.js';
import { waitUntil } from '../helpers/wait.js';

// docs/streaming.md: the client library's writer and reader, and `ams send ROOM --stream`.
describe('streamed messages: client library and ams send --stream', () => {
  const t = useTestServer();
  let admin: TestAgent;
  let alice: TestAgent;
  let bob: TestAgent;
  let room: TestRoom;
  const clients: AmsClient[] = [];
  beforeAll(async () => {
    await ensureBuilt();
    admin = await newAdmin(t.api);
    [alice, bob] = await Promise.all([newAgent(t.api), newAgent(t.api)]);
    room = await newRoom(t.api, admin, [alice, bob]);
  });
  afterAll(async () => {
    for (const client of clients) await client.close();
  });
  const clientOf = async (agent: TestAgent): Promise<AmsClient> => {
    const client = new AmsClient({ url: t.server.url, apiToken: agent.apiToken });
    clients.push(client);
    await client.connect();
    return client;
  };

  it('the writer appends in order and ends; the reader gets deltas with the current text, then the end', async () => {
    const writer = await clientOf(alice);
    const reader = await clientOf(bob);
    const seen: { current: string; gap: boolean }[] = [];
    reader.on('messageDelta', (delta) => seen.push({ current: delta.current, gap: delta.gap }));
    const ended: string[] = [];
    reader.on('messageUpdated', (update) => {
      if (update.streamEnd === 'complete') ended.push(update.body);
    });
    const stream = await writer.stream(room.slug);
    expect(stream.message).toMatchObject({ streaming: true, body: '' });
    const lengths = await Promise.all(['one ', 'two ', 'three ', 'four'].map((text) => stream.append(text)));
    expect(lengths).toEqual([4, 8, 14, 18]);
    await waitUntil('the reader has the text', () => reader.streamedText(stream.message.id) === 'one two three four');
    expect(seen.every((s) => !s.gap)).toBe(true);
    expect(seen.at(-1)!.current).toBe('one two three four');
    const message = await stream.end();
    expect(message).toMatchObject({ body: 'one two three four', streaming: false, streamEnd: 'complete' });
    await waitUntil('the end', () => ended.includes('one two three four'));
  });

  it('ams send ROOM --stream streams its standard input and ends at its end', async () => {
    const reader = await clientOf(bob);
    const deltas: string[] = [];
    reader.on('messageDelta', (delta) => deltas.push(delta.text));
    const child = spawn(process.execPath, [CLI_JS, 'send', room.slug, '--stream', '--json'], {
      env: { PATH: process.env.PATH ?? '', AMS_URL: t.server.url, AMS_API_TOKEN: alice.apiToken },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    child.stdin.write('first line\n');
    // The first chunk is appended before the input ends: a member sees it grow.
    await waitUntil('the first delta', () => deltas.join('').includes('first line'));
    // A character split between two chunks arrives whole.
    const euro = Buffer.from('€');
    child.stdin.write(Buffer.concat([Buffer.from('second '), euro.subarray(0, 1)]));
    child.stdin.end(Buffer.concat([euro.subarray(1), Buffer.from(' end')]));
    expect(await exited, stderr).toBe(0);
    const message = JSON.parse(stdout) as { body: string; streamEnd: string };
    expect(message).toMatchObject({ body: 'first line\nsecond € end', streamEnd: 'complete' });
  });
});
