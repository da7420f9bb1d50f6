import { Type } from '@sinclair/typebox';
import type { TSchema } from '@sinclair/typebox';
import {
  DmOpenAckSchema, DmOpenPayload, ReadCursorSchema, standardiseText, WsMessageSchema, AckErrorSchema, AckOkSchema,
  HelloAckSchema, RoomPositionsSchema, HistoryAckSchema, HistoryPayload, NAMESPACE, PresenceUpdateSchema, ReadPayload,
  RoomAddedSchema, RoomRemovedSchema, RoomListAckSchema, SyncAckSchema, SyncPayload, RoomListPayload, RoomRefPayload,
  SendAckSchema, SendPayload, WsErrorSchema, MessageDeletedSchema, MessageUpdatedSchema, ThreadAckSchema, ThreadPayload,
  ActivitySetPayload, ActivityUpdate, LeaseUpdatedSchema, TaskMoveAckSchema, TaskMovePayload, TaskSchema, type ClientEventName,
  AppendAckSchema, AppendPayload, EndAckSchema, EndPayload, MessageDeltaSchema,
  MessageAckPayload, MessageAckAckSchema, MessageAckedSchema,
} from '@agent-messaging/protocol';

/**
 * The AsyncAPI 3.1 document (the latest version @asyncapi/parser accepts) of the `/agents`
 * namespace (docs/protocol.md), built from the schemas of protocol.ts. The document describes the server: client events are operations it `receive`s,
 * each with its acknowledgement as the operation's `reply`; server events are operations it `send`s.
 * Event names (which hold `:`) are in each message's `name`; the keys are camelCase.
 */

interface EventDoc {
  key: string;
  summary: string;
  payload: TSchema;
}

interface ClientEventDoc extends EventDoc {
  name: ClientEventName;
  /** The acknowledgement on success (the failure is always AckError). */
  ack: { key: string; schema: TSchema; summary: string };
}

const CLIENT_EVENTS: ClientEventDoc[] = [
  {
    name: 'room:join', key: 'roomJoin', payload: RoomRefPayload,
    summary: 'Subscribe this connection to a room it is a member of; `presence:update` online to the room when it is the agent\'s first socket there. Errors: VALIDATION_ERROR, ROOM_NOT_FOUND, FORBIDDEN. Scoped token: rooms:read (without messages:read the socket is not subscribed).',
    ack: { key: 'roomJoinAck', schema: AckOkSchema, summary: 'Joined (only when the client passed an acknowledgement callback)' },
  },
  {
    name: 'room:leave', key: 'roomLeave', payload: RoomRefPayload,
    summary: 'Unsubscribe this connection from a room; `presence:update` offline when the agent\'s last socket leaves it. Scoped token: rooms:read.',
    ack: { key: 'roomLeaveAck', schema: AckOkSchema, summary: 'Left (only when the client passed an acknowledgement callback)' },
  },
  {
    name: 'room:list', key: 'roomList', payload: RoomListPayload,
    summary: 'The rooms the agent is a member of (within a scoped token\'s rooms). Needs an acknowledgement callback; the payload may be omitted. Scoped token: rooms:read.',
    ack: { key: 'roomListAck', schema: RoomListAckSchema, summary: 'The rooms' },
  },
  {
    name: 'message:send', key: 'messageSend', payload: SendPayload,
    summary: 'Send a message (the same as REST POST /api/v1/rooms/{id}/messages); `message:new` goes to every member, sender included. Errors: VALIDATION_ERROR, ROOM_NOT_FOUND, FORBIDDEN, CONFLICT (clientMsgId reused). Scoped token: messages:write.',
    ack: { key: 'messageSendAck', schema: SendAckSchema, summary: 'The stored message id (a clientMsgId repeat: the original\'s)' },
  },
  {
    name: 'message:history', key: 'messageHistory', payload: HistoryPayload,
    summary: 'A page of a room\'s history, newest first. Needs an acknowledgement callback. Errors: VALIDATION_ERROR, ROOM_NOT_FOUND, FORBIDDEN (strict mode, not a member). Scoped token: messages:read.',
    ack: { key: 'messageHistoryAck', schema: HistoryAckSchema, summary: 'The page' },
  },
  {
    name: 'room:sync', key: 'roomSync', payload: SyncPayload,
    summary: 'Forward catch-up: the messages after afterSeq, oldest first (the same as REST ?afterSeq=). Needs an acknowledgement callback. Errors: VALIDATION_ERROR, ROOM_NOT_FOUND, FORBIDDEN (strict mode, not a member). Scoped token: messages:read.',
    ack: { key: 'roomSyncAck', schema: SyncAckSchema, summary: 'The page, with the room\'s lastSeq' },
  },
  {
    name: 'room:read', key: 'roomRead', payload: ReadPayload,
    summary: 'Move the agent\'s read cursor of a room forward (the same as REST POST /api/v1/rooms/{id}/read). Errors: VALIDATION_ERROR (seq above lastSeq), ROOM_NOT_FOUND, FORBIDDEN (not a member). Scoped token: messages:read.',
    ack: { key: 'roomReadAck', schema: ReadCursorSchema, summary: 'The read cursor and what is left unread' },
  },
  {
    name: 'message:thread', key: 'messageThread', payload: ThreadPayload,
    summary: 'A thread: its root and its replies with seq > afterSeq (default 0), oldest first (the same as REST GET /api/v1/rooms/{id}/messages/{messageId}/thread); messageId is the root or any reply. Needs an acknowledgement callback. Errors: VALIDATION_ERROR, ROOM_NOT_FOUND, NOT_FOUND (unknown message), FORBIDDEN. Scoped token: messages:read.',
    ack: { key: 'messageThreadAck', schema: ThreadAckSchema, summary: 'The root and a page of replies' },
  }, {
    name: 'dm:open', key: 'dmOpen', payload: DmOpenPayload,
    summary: 'The direct room of the agent and agentId, made the first time (either side asking), the same as REST POST /api/v1/direct-rooms; a new room also reaches every socket of both agents as room:added. Errors: VALIDATION_ERROR (not a UUID, or the caller), NOT_FOUND (unknown agent), FORBIDDEN (the other agent is disabled). Scoped token: messages:write.',
    ack: { key: 'dmOpenAck', schema: DmOpenAckSchema, summary: 'The direct room (with kind and lastSeq)' },
  }, {
    name: 'activity:set', key: 'activitySet', payload: ActivitySetPayload,
    summary: 'Show the room typing (8 s), working (120 s, text 0..80) or idle (the same as REST POST /api/v1/rooms/{id}/activity); not stored. Errors: VALIDATION_ERROR, ROOM_NOT_FOUND, FORBIDDEN (not a member). Scoped token: messages:write.',
    ack: { key: 'activitySetAck', schema: Type.Object({ ok: Type.Literal(true) }), summary: '{ok: true}' },
  }, {
    name: 'task:move', key: 'taskMove', payload: TaskMovePayload,
    summary: 'Move a task of which the agent is the requester or the assignee (the same as REST POST /api/v1/tasks/{id}/state, docs/tasks.md): its state, the message the move posts, its result; the task:updated it publishes reaches both sides. Errors: VALIDATION_ERROR (the message names the field), NOT_FOUND (unknown task, or one of others), FORBIDDEN (an admin who is neither side), CONFLICT (a move the table does not allow, or another move came first; the message ends with state <the task\'s state>). Scoped token: tasks:write.',
    ack: { key: 'taskMoveAck', schema: TaskMoveAckSchema, summary: 'The task as it is after the move, its history included' },
  }, {
    name: 'message:append', key: 'messageAppend', payload: AppendPayload,
    summary: 'Append text to an open streamed message of the agent\'s (the same as REST POST /api/v1/rooms/{id}/messages/{messageId}/append, docs/streaming.md); the other members get message:delta. Not in the connection\'s event budget: at most 200 appends per message per second. Errors: VALIDATION_ERROR (text: empty, NUL, lone surrogates, the body past 16384 characters), NOT_FOUND (unknown or deleted message), FORBIDDEN (not the sender), CONFLICT (not open), RATE_LIMIT_EXCEEDED. Scoped token: messages:write.',
    ack: { key: 'messageAppendAck', schema: AppendAckSchema, summary: '{ok: true, length}: the body\'s length after the append, in characters' },
  }, {
    name: 'message:end', key: 'messageEnd', payload: EndPayload,
    summary: 'End an open streamed message of the agent\'s (the same as REST POST .../messages/{messageId}/end): body replaces the text, data is set; members get message:updated (or message:deleted when it has no text at all). Errors: VALIDATION_ERROR, NOT_FOUND, FORBIDDEN, CONFLICT (not open). Scoped token: messages:write.',
    ack: { key: 'messageEndAck', schema: EndAckSchema, summary: '{message}: the message as it is now, streaming false, streamEnd "complete"' },
  }, {
    name: 'message:ack', key: 'messageAck', payload: MessageAckPayload,
    summary: 'Acknowledge a message that asks the agent to (ackRequired; the same as REST POST /api/v1/rooms/{id}/messages/{messageId}/ack, docs/acknowledgements.md): its sender\'s sockets get message:acked. Again: the same ackedAt, nothing announced. Errors: VALIDATION_ERROR, ROOM_NOT_FOUND (also a direct room of others), FORBIDDEN (not a member), NOT_FOUND (unknown or deleted message), CONFLICT (the message asks nothing, or not of this agent). Scoped token: messages:read.',
    ack: { key: 'messageAckAck', schema: MessageAckAckSchema, summary: '{ackedAt}: when the agent acknowledged it' },
  },
];

const SERVER_EVENTS: (EventDoc & { name: string })[] = [
  { name: 'agent:hello-ack', key: 'agentHelloAck', payload: HelloAckSchema, summary: 'After a successful handshake: the agent and the rooms it was joined to' },
  {
    name: 'room:positions', key: 'roomPositions', payload: RoomPositionsSchema,
    summary: 'Periodically (POSITION_CHECK_INTERVAL_MS) where the positions differ from those the connection was last told, and at once after the node lost its cluster bus or database for a while: the current lastSeq of each of the connection\'s rooms, to detect missed messages',
  },
  { name: 'message:new', key: 'messageNew', payload: WsMessageSchema, summary: 'A message in one of the connection\'s rooms, sender included (a scoped token\'s socket: only with messages:read, only its rooms)' },
  { name: 'message:updated', key: 'messageUpdated', payload: MessageUpdatedSchema, summary: 'A message of one of the connection\'s rooms was edited by its sender: its new body and editedAt (with its data and attachments, unchanged); or a streamed message ended (editedAt null, with streaming and streamEnd)' },
  {
    name: 'message:delta', key: 'messageDelta', payload: MessageDeltaSchema,
    summary: 'Text appended to an open streamed message of one of the connection\'s rooms (not to its sender\'s sockets), in order; appends merged, at most one delta per 40 ms per message. offset is the body\'s length before text: a client whose text is shorter missed a delta and reads the message (docs/streaming.md)',
  },
  { name: 'message:deleted', key: 'messageDeleted', payload: MessageDeletedSchema, summary: 'A message of one of the connection\'s rooms was deleted: it stays as a tombstone (body "", deletedAt set)' },
  { name: 'presence:update', key: 'presenceUpdate', payload: PresenceUpdateSchema, summary: 'An agent came online in, or left, one of the connection\'s rooms; in a burst a room\'s updates go out together, in order, at most 50 ms late' },
  {
    name: 'room:added', key: 'roomAdded', payload: RoomAddedSchema,
    summary: 'The agent became a member of a room while connected (a direct room opened by either side, POST /rooms with members, POST /rooms/{id}/members), on any node: the connection is already subscribed to it. The Room carries kind and lastSeq.',
  },
  { name: 'activity:update', key: 'activityUpdate', payload: ActivityUpdate, summary: 'A member of one of the connection\'s rooms is typing, working or idle again (at most one per agent and room per second; nothing is sent when a state expires)' },
  {
    name: 'task:updated', key: 'taskUpdated', payload: Type.Object({ task: TaskSchema }, { title: 'TaskUpdated' }),
    summary: 'A task of which the agent is the requester or the assignee, or a queued task of a room of which it is a member, was created, moved or claimed (docs/tasks.md), on any node: the task as it is now, its history included',
  },
  {
    name: 'message:acked', key: 'messageAcked', payload: MessageAckedSchema,
    summary: 'An agent acknowledged a message this agent sent (docs/acknowledgements.md), on any node: only the sender\'s sockets (a scoped token\'s: with messages:read in the room), once per agent',
  },
  {
    name: 'lease:updated', key: 'leaseUpdated', payload: LeaseUpdatedSchema,
    summary: 'A lease in one of the connection\'s rooms was granted, renewed, released or ran out (docs/leases.md), on any node; an admin\'s release of another agent\'s lease also reaches the holder',
  },
  { name: 'room:removed', key: 'roomRemoved', payload: RoomRemovedSchema, summary: 'The agent stopped being a member of a room: the connection is already unsubscribed from it' },
  {
    name: 'error', key: 'error', payload: WsErrorSchema,
    summary: 'A failed event that had no acknowledgement callback (with its requestId), a rate-limited event (RATE_LIMIT_EXCEEDED), or a refused connection: for a passing reason (UNAVAILABLE, INTERNAL) the transport is closed next and the client reconnects by itself; otherwise (AUTH_FAILED, RATE_LIMIT_EXCEEDED, VALIDATION_ERROR) the server disconnects the socket, for good (docs/websocket.md, Refused connections)',
  },
];

/** Schemas as plain JSON (TypeBox's symbol keys dropped, `Text` limits in JSON Schema words). */
const plain = (schema: TSchema): unknown => {
  const copy: unknown = JSON.parse(JSON.stringify(schema));
  standardiseText(copy);
  return copy;
};

const CHANNEL = 'agents';
const channelRef = { $ref: `#/channels/${CHANNEL}` };
const messageRef = (key: string) => ({ $ref: `#/channels/${CHANNEL}/messages/${key}` });

export function buildAsyncApiDocument(version: string): Record<string, unknown> {
  const messages: Record<string, unknown> = {};
  const operations: Record<string, unknown> = {};
  const message = (key: string, name: string, summary: string, payload: TSchema) => {
    messages[key] = { name, title: name, summary, contentType: 'application/json', payload: plain(payload) };
  };

  message('ackError', 'ack:error', 'The acknowledgement of a failed event: {error: {code, message}}', AckErrorSchema);
  for (const event of CLIENT_EVENTS) {
    message(event.key, event.name, event.summary, event.payload);
    message(event.ack.key, `${event.name} (ack)`, event.ack.summary, event.ack.schema);
    operations[event.key] = {
      action: 'receive',
      channel: channelRef,
      title: event.name,
      summary: event.summary,
      messages: [messageRef(event.key)],
      reply: { channel: channelRef, messages: [messageRef(event.ack.key), messageRef('ackError')] },
    };
  }
  for (const event of SERVER_EVENTS) {
    message(event.key, event.name, event.summary, event.payload);
    operations[event.key] = { action: 'send', channel: channelRef, title: event.name, summary: event.summary, messages: [messageRef(event.key)] };
  }

  return {
    asyncapi: '3.1.0',
    info: {
      title: 'Agent Messaging Service: WebSocket interface',
      version,
      description:
        `Socket.IO v4 namespace \`${NAMESPACE}\` (WebSocket transport). Authenticate with the session JWT in the handshake ` +
        'query `token` (or `auth.token`). Each message\'s `name` is the Socket.IO event name; acknowledgements are the ' +
        'replies of the client events (Socket.IO acknowledgement callbacks). The REST interface is described by `/openapi.json`.',
    },
    defaultContentType: 'application/json',
    servers: {
      service: {
        host: '{host}',
        protocol: 'ws',
        pathname: '/socket.io/',
        description: 'The service itself (Socket.IO, Engine.IO protocol 4)',
        variables: { host: { default: 'localhost:3000', description: 'host:port of the service' } },
      },
    },
    channels: {
      [CHANNEL]: {
        address: NAMESPACE,
        title: 'The /agents namespace',
        description: 'Every event of an agent\'s connection, both ways.',
        messages,
      },
    },
    operations,
  };
}
