import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AmsClient, AmsError } from '@agent-messaging/client';
import { newAgent, type TestAgent } from '../helpers/api.js';
import { CLI_JS, ensureBuilt } from '../helpers/build.js';
import { runAms, type CliResult } from '../helpers/cli.js';
import { runProcess } from '../helpers/processes.js';
import { testConfig } from '../helpers/config.js';
import { useTestServer } from '../helpers/suite.js';

// The client library's files (uploadFile, downloadFile, fileInfo) and `ams upload` / `ams download` (docs/client.md).

const sha = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

async function collect(body: ReadableStream<Uint8Array>): Promise<Buffer> {
  const pieces: Uint8Array[] = [];
  for await (const piece of body as unknown as AsyncIterable<Uint8Array>) pieces.push(piece);
  return Buffer.concat(pieces);
}

describe('client library and ams: files', { timeout: 120_000 }, () => {
  // Files up to 64 MiB here: the memory test sends more than it may hold, so streaming shows.
  // Large uploads slowed by memory sampling on a busy machine: a request timeout longer than the 30 s default.
  const t = useTestServer({ config: { files: { ...testConfig().files, maxBytes: 64 * 1024 * 1024 }, requestTimeoutMs: 120_000 } });
  let agent: TestAgent;
  let client: AmsClient;
  let folder: string;

  beforeAll(async () => {
    agent = await newAgent(t.api);
    client = new AmsClient({ url: t.server.url, apiToken: agent.apiToken });
    folder = mkdtempSync(join(tmpdir(), 'ams-files-'));
  });
  afterAll(async () => {
    await client.close();
    rmSync(folder, { recursive: true, force: true });
  });

  it('uploads a Buffer, a Blob, a web stream and a Node Readable; downloads as a stream with the file\'s description', async () => {
    const bytes = randomBytes(300 * 1024);
    const fromBuffer = await client.uploadFile('a.bin', bytes);
    expect(fromBuffer).toMatchObject({ name: 'a.bin', size: bytes.length, sha256: sha(bytes), contentType: 'application/octet-stream' });
    const fromBlob = await client.uploadFile('b.txt', new Blob(['blob text'], { type: 'text/plain' }));
    expect(fromBlob).toMatchObject({ contentType: 'text/plain', size: 9 });
    const fromWeb = await client.uploadFile('c.bin', new Blob([bytes]).stream(), { contentType: 'application/x-c' });
    expect(fromWeb).toMatchObject({ sha256: sha(bytes), contentType: 'application/x-c' });
    const fromNode = await client.uploadFile('d é.bin', Readable.from([bytes.subarray(0, 1000), bytes.subarray(1000)]));
    expect(fromNode.sha256).toBe(sha(bytes));

    const download = await client.downloadFile(fromNode.id);
    expect(download).toMatchObject({ id: fromNode.id, name: 'd é.bin', size: bytes.length, sha256: sha(bytes), contentType: 'application/octet-stream' });
    expect((await collect(download.body)).equals(bytes)).toBe(true);
    const part = await client.downloadFile(fromNode.id, { range: { start: 10, end: 19 } });
    expect(part.contentRange).toBe(`bytes 10-19/${bytes.length}`);
    expect((await collect(part.body)).equals(bytes.subarray(10, 20))).toBe(true);
    expect(await client.fileInfo(fromBlob.id)).toMatchObject({ name: 'b.txt', size: 9, contentType: 'text/plain' });
  });

  it('a streamed upload holds little of the body in memory (client and server together, after a collection)', { timeout: 120_000 }, async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const held = (): number => {
      gc();
      const m = process.memoryUsage();
      return m.heapUsed + m.arrayBuffers;
    };
    const total = 48 * 1024 * 1024;
    const hash = createHash('sha256');
    async function* pieces(): AsyncGenerator<Uint8Array> {
      for (let sent = 0; sent < total; sent += 64 * 1024) {
        const piece = Buffer.alloc(64 * 1024, sent % 251);
        hash.update(piece);
        yield piece;
      }
    }
    const base = held();
    let peak = 0;
    const sampler = setInterval(() => {
      peak = Math.max(peak, held() - base);
    }, 100);
    const file = await client.uploadFile('big.bin', Readable.from(pieces()));
    clearInterval(sampler);
    expect(file).toMatchObject({ size: total, sha256: hash.digest('hex') });
    // Measured: 6 to 19 MiB through node:http (the high figures with other work on the machine: what
    // the server has yet to write), whatever the file's size; through Node 20's fetch the client alone
    // held the whole body. Well under the 48 MiB sent.
    expect(peak).toBeLessThan(24 * 1024 * 1024);
  });

  it('refusals are AmsErrors: a hostile name (400 with details), an unknown file (404)', async () => {
    const bad = await client.uploadFile('a/b', Buffer.from('x')).catch((err: unknown) => err);
    expect(bad).toBeInstanceOf(AmsError);
    expect(bad).toMatchObject({ status: 400 });
    const missing = await client.downloadFile('01890000-0000-7000-8000-000000000000').catch((err: unknown) => err);
    expect(missing).toMatchObject({ status: 404 });
  });

  it('ams upload PATH and ams download ID -o PATH stream to and from disk', async () => {
    await ensureBuilt();
    const bytes = randomBytes(700 * 1024);
    const source = join(folder, 'report.bin');
    writeFileSync(source, bytes);
    const env = { AMS_URL: t.server.url, AMS_API_TOKEN: agent.apiToken };
    const up = await runAms(env, 'upload', source, '--content-type', 'application/x-report', '--json');
    expect(up).toMatchObject({ code: 0, stderr: '' });
    const file = JSON.parse(up.stdout) as { id: string; name: string; sha256: string; contentType: string };
    expect(file).toMatchObject({ name: 'report.bin', sha256: sha(bytes), contentType: 'application/x-report' });
    const named = await runAms(env, 'upload', source, '--name', 'other.bin');
    expect(named.stdout).toMatch(/^uploaded [0-9a-f-]{36} \(other\.bin, 716800 bytes, sha256 [0-9a-f]{64}\)\n$/);

    const target = join(folder, 'copy.bin');
    const down = await runAms(env, 'download', file.id, '-o', target);
    expect(down).toMatchObject({ code: 0, stdout: `downloaded ${file.id} to ${target} (${bytes.length} bytes)\n` });
    expect(readFileSync(target).equals(bytes)).toBe(true);
    const unknown = await runAms(env, 'download', '01890000-0000-7000-8000-000000000000', '-o', join(folder, 'none.bin'));
    expect(unknown.code).toBe(1);
  });

  it('ams download never writes over a file: refused (exit 1, the file untouched) unless --force, by its own name or -o', async () => {
    await ensureBuilt();
    const env = { AMS_URL: t.server.url, AMS_API_TOKEN: agent.apiToken };
    const bytes = randomBytes(64 * 1024);
    const source = join(folder, 'kept-source.bin');
    writeFileSync(source, bytes);
    const file = JSON.parse((await runAms(env, 'upload', source, '--name', 'kept.bin', '--json')).stdout) as { id: string };
    // ams in `folder`, where a download by the file's own name lands.
    const amsIn = async (...args: string[]): Promise<CliResult> => {
      const { code, stdout, stderr } = await runProcess({ argv: [process.execPath, CLI_JS, ...args], cwd: folder, env: { PATH: process.env.PATH ?? '', ...env } });
      return { code: code ?? -1, stdout, stderr };
    };
    const mine = Buffer.from('a file of my own, not the download\n');
    const own = join(folder, 'kept.bin');
    writeFileSync(own, mine);

    const refused = await amsIn('download', file.id);
    expect(refused).toEqual({ code: 1, stdout: '', stderr: 'ams: kept.bin exists: ams download never writes over a file (--force replaces it; -o names another)\n' });
    expect(readFileSync(own).equals(mine)).toBe(true);
    expect(existsSync(`${own}.part`)).toBe(false);
    const named = await amsIn('download', file.id, '-o', own);
    expect(named).toMatchObject({ code: 1, stdout: '' });
    expect(readFileSync(own).equals(mine)).toBe(true);

    expect(await amsIn('download', file.id, '--force')).toEqual({ code: 0, stdout: `downloaded ${file.id} to kept.bin (${bytes.length} bytes)\n`, stderr: '' });
    expect(readFileSync(own).equals(bytes)).toBe(true);
    writeFileSync(own, mine);
    expect(await amsIn('download', file.id, '-o', own, '--force')).toMatchObject({ code: 0, stderr: '' });
    expect(readFileSync(own).equals(bytes)).toBe(true);
    // A new name is written as before, without --force.
    expect(await amsIn('download', file.id, '-o', 'fresh.bin')).toMatchObject({ code: 0, stderr: '' });
    expect(readFileSync(join(folder, 'fresh.bin')).equals(bytes)).toBe(true);
  });

  it('ams upload takes the type from the file name (text/plain, image/png), plain bytes for an unknown extension, --content-type over both', async () => {
    await ensureBuilt();
    const env = { AMS_URL: t.server.url, AMS_API_TOKEN: agent.apiToken };
    const typeOf = async (name: string, ...extra: string[]): Promise<string> => {
      const path = join(folder, name);
      writeFileSync(path, 'some bytes');
      const up = await runAms(env, 'upload', path, '--json', ...extra);
      expect(up, name).toMatchObject({ code: 0, stderr: '' });
      return (JSON.parse(up.stdout) as { contentType: string }).contentType;
    };
    expect(await typeOf('notes.txt')).toBe('text/plain');
    expect(await typeOf('picture.png')).toBe('image/png');
    expect(await typeOf('data.unknownext')).toBe('application/octet-stream');
    // The stored name decides: --name report.json makes it JSON.
    expect(await typeOf('upload.bin', '--name', 'report.json')).toBe('application/json');
    expect(await typeOf('notes2.txt', '--content-type', 'text/markdown')).toBe('text/markdown');
  });
});
