import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newAdmin, newAgent, newRoom, type TestAgent, type TestRoom } from '../helpers/api.js';
import { callTool, connectMcp } from '../helpers/mcp.js';
import { useTestServer } from '../helpers/suite.js';

// docs/mcp.md, Errors: an agent, room, message, file, task, post or channel named well but not
// existing is not found in every tool (ROOM_NOT_FOUND for a room, NOT_FOUND for the others), never a
// validation error; an agent's answer names it.

const UUID = '0190a5d0-0000-7000-8000-00000000beef';
const NAME = 'no-such-agent-here';
const SLUG = 'no-such-room-here';

describe('MCP: a reference to nothing is not found', () => {
  const { server, api } = useTestServer();
  let alice: TestAgent;
  let room: TestRoom;
  let mcp: Client;

  beforeAll(async () => {
    const admin = await newAdmin(api);
    alice = await newAgent(api);
    room = await newRoom(api, admin, [alice]);
    mcp = await connectMcp(server.url, alice.jwt);
  });
  afterAll(async () => {
    await mcp.close();
  });

  // tool, arguments, expected code, what the text must name (agents only).
  const cases = (): [string, Record<string, unknown>, string, string?][] => [
    ...[NAME, UUID].flatMap((agent): [string, Record<string, unknown>, string, string][] => [
      ['send_direct_message', { to: agent, body: 'x' }, 'NOT_FOUND', agent],
      ['create_task', { assignee: agent, title: 'x' }, 'NOT_FOUND', agent],
      ['request_approval', { approver: agent, title: 'x' }, 'NOT_FOUND', agent],
      ['send_message', { room: room.slug, body: 'x', mentions: [agent] }, 'NOT_FOUND', agent],
    ]),
    ...[SLUG, UUID].flatMap((ref): [string, Record<string, unknown>, string][] => [
      ['read_messages', { room: ref }, 'ROOM_NOT_FOUND'],
      ['send_message', { room: ref, body: 'x' }, 'ROOM_NOT_FOUND'],
      ['read_replies', { room: ref, messageId: UUID }, 'ROOM_NOT_FOUND'],
      ['edit_message', { room: ref, messageId: UUID, body: 'x' }, 'ROOM_NOT_FOUND'],
      ['delete_message', { room: ref, messageId: UUID }, 'ROOM_NOT_FOUND'],
      ['set_activity', { room: ref, state: 'typing' }, 'ROOM_NOT_FOUND'],
      ['mark_read', { room: ref, seq: 0 }, 'ROOM_NOT_FOUND'],
      ['search_messages', { query: 'x', room: ref }, 'ROOM_NOT_FOUND'],
    ]),
    ['read_replies', { room: room.slug, messageId: UUID }, 'NOT_FOUND'],
    ['edit_message', { room: room.slug, messageId: UUID, body: 'x' }, 'NOT_FOUND'],
    ['delete_message', { room: room.slug, messageId: UUID }, 'NOT_FOUND'],
    ['read_file', { fileId: UUID }, 'NOT_FOUND'],
    ['get_task', { taskId: UUID }, 'NOT_FOUND'],
    ['update_task', { taskId: UUID, state: 'working' }, 'NOT_FOUND'],
    ['read_thread', { postId: UUID }, 'NOT_FOUND'],
    ['reply_to_post', { postId: UUID, body: 'x' }, 'NOT_FOUND'],
    ['react_to_post', { postId: UUID, emoji: '👍' }, 'NOT_FOUND'],
    ['read_feed', { channel: 'no-such-channel' }, 'NOT_FOUND'],
    ['create_post', { channel: UUID, body: 'x' }, 'NOT_FOUND'],
  ];

  it('every tool taking a reference answers its not-found code', async () => {
    const answers = [];
    for (const [tool, args, , named] of cases()) {
      const outcome = await callTool(mcp, tool, args);
      answers.push({ tool, args, isError: outcome.isError, code: outcome.data?.error?.code, names: named === undefined || outcome.text.includes(named) });
    }
    expect(answers).toEqual(cases().map(([tool, args, code]) => ({ tool, args, isError: true, code, names: true })));
  });
});
