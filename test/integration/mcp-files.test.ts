import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newAgent, type TestAgent } from '../helpers/api.js';
import { callTool, connectMcp } from '../helpers/mcp.js';
import { useTestServer } from '../helpers/suite.js';

// docs/mcp.md: upload_file and read_file, over the same files service as REST (docs/files.md).

const PNG = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex');

describe('/mcp: upload_file and read_file', () => {
  const t = useTestServer();
  let alice: TestAgent;
  let bob: TestAgent;
  let mcp: Client;
  let bobMcp: Client;

  beforeAll(async () => {
    [alice, bob] = [await newAgent(t.api), await newAgent(t.api)];
    mcp = await connectMcp(t.server.url, alice.jwt);
    bobMcp = await connectMcp(t.server.url, bob.jwt);
  });
  afterAll(async () => {
    await mcp.close();
    await bobMcp.close();
  });

  it('uploads base64 and reads a textual file back as text (the same file over REST)', async () => {
    const body = '{"verdict":"pass"}';
    const up = await callTool(mcp, 'upload_file', { name: 'verdict.json', contentType: 'application/json', base64: Buffer.from(body).toString('base64') });
    expect(up.isError).toBe(false);
    expect(up.data.file).toMatchObject({ name: 'verdict.json', contentType: 'application/json', size: body.length, uploaderId: alice.id });
    const read = await callTool(mcp, 'read_file', { fileId: up.data.file.id });
    expect(read.isError).toBe(false);
    expect(read.text).toContain(body);
    expect(read.data.file.id).toBe(up.data.file.id);
    const rest = await fetch(`${t.server.url}/api/v1/files/${up.data.file.id as string}`, { headers: { authorization: `Bearer ${alice.jwt}` } });
    expect(await rest.text()).toBe(body);
  });

  it('gives an image as MCP image content, and other types as the file\'s description only', async () => {
    const image = await callTool(mcp, 'upload_file', { name: 'dot.png', contentType: 'image/png', base64: PNG.toString('base64') });
    const result = await mcp.callTool({ name: 'read_file', arguments: { fileId: image.data.file.id } });
    const content = result.content as { type: string; data?: string; mimeType?: string }[];
    expect(content.find((c) => c.type === 'image')).toEqual({ type: 'image', data: PNG.toString('base64'), mimeType: 'image/png' });

    const binary = await callTool(mcp, 'upload_file', { name: 'blob.bin', contentType: 'application/octet-stream', base64: 'AAEC' });
    const described = await callTool(mcp, 'read_file', { fileId: binary.data.file.id });
    expect(described.isError).toBe(false);
    expect(described.data).toEqual({ file: binary.data.file });
    expect(described.text).toContain('not text or an image');
  });

  it('refuses more than 1 MiB decoded, bad base64 and hostile names with VALIDATION_ERROR', async () => {
    const big = await callTool(mcp, 'upload_file', { name: 'big.bin', contentType: 'application/octet-stream', base64: Buffer.alloc(1024 * 1024 + 1).toString('base64') });
    expect(big.isError).toBe(true);
    expect(big.text).toMatch(/^VALIDATION_ERROR/);
    // Exactly 1 MiB fits (through the /mcp body limit too).
    const exact = await callTool(mcp, 'upload_file', { name: 'exact.bin', contentType: 'application/octet-stream', base64: Buffer.alloc(1024 * 1024, 1).toString('base64') });
    expect(exact.isError).toBe(false);
    expect(exact.data.file.size).toBe(1024 * 1024);
    const bad = await callTool(mcp, 'upload_file', { name: 'x.bin', contentType: 'application/octet-stream', base64: 'not*base64' });
    expect(bad.text).toMatch(/^VALIDATION_ERROR.*base64/);
    const hostile = await callTool(mcp, 'upload_file', { name: 'evil\u202Etxt.exe', contentType: 'text/plain', base64: 'AA==' });
    expect(hostile.text).toMatch(/^VALIDATION_ERROR.*name/);
  });

  it('read_file is NOT_FOUND to an agent that may not read the file, and for an unknown id', async () => {
    const up = await callTool(mcp, 'upload_file', { name: 'private.txt', contentType: 'text/plain', base64: Buffer.from('mine').toString('base64') });
    const other = await callTool(bobMcp, 'read_file', { fileId: up.data.file.id });
    expect(other.isError).toBe(true);
    expect(other.text).toMatch(/^NOT_FOUND/);
    expect((await callTool(mcp, 'read_file', { fileId: '0190c3f5-0000-7000-8000-000000000000' })).text).toMatch(/^NOT_FOUND/);
    // Not an id at all: a bad argument.
    expect((await callTool(mcp, 'read_file', { fileId: 'nope' })).text).toMatch(/^VALIDATION_ERROR/);
  });
});
