import type { Static } from '@sinclair/typebox';
import type {
  AgentSchema, CreateAgentInput, IssuedTokenSchema, IssueTokenInput, SessionSchema, TokenSummarySchema, DirectorySchema,
  InboxPageSchema, HistoryPageSchema, MessageSchema, SyncPageSchema, WsMessageSchema, CreateRoomInput, MembershipSchema,
  ReadCursorSchema, RoomMembersSchema, RoomSchema, SearchPageSchema, CreatedWebhookSchema, CreateWebhookInput,
  DeliverySchema, WebhookSchema, ChannelSchema, CreateChannelInput, PostPageSchema, PostSchema, ReactionListSchema,
  ThreadSchema, ToggleResultSchema, AckOkSchema, DmOpenAckSchema, DmOpenPayload, HelloAckSchema, HistoryAckSchema,
  HistoryPayload, PresenceUpdateSchema, ReadPayload, RoomListAckSchema, RoomListPayload, RoomRefPayload, SendAckSchema,
  SendPayload, SyncAckSchema, SyncPayload, WsErrorSchema, ThreadPageSchema, ThreadPayload, ThreadAckSchema,
  MessageUpdatedSchema, MessageDeletedSchema, MessageDeltaSchema, InboxFilter as ProtocolInboxFilter, ActivitySetPayload, ActivityUpdate as ActivityUpdateSchema, TaskMovePayload, TaskMoveAckSchema,
  Activity as ActivitySchema, ActivityState as ProtocolActivityState, FileSchema,
  AuditPageSchema, AuditQuerySchema, AuditRecordSchema, UpdateAgentInput, SkillSchema,
  TaskSchema, TaskPageSchema, CreateTaskInput, TaskState as ProtocolTaskState,
  AckListSchema, MessageAckedSchema, MessageAckPayload, MessageAckAckSchema, Importance as ProtocolImportance,
  LeaseSchema, LeaseState as ProtocolLeaseState,
} from '@agent-messaging/protocol';

// The objects of the service, typed from the very TypeBox schemas its routes and events are
// described with (type imports only: none of this reaches the built JavaScript).

export type Agent = Static<typeof AgentSchema>;
export type NewAgent = Static<typeof CreateAgentInput>;
/** `updateAgent`'s changes: each given field replaces the stored one (docs/protocol.md, Agent profiles). */
export type AgentUpdate = Static<typeof UpdateAgentInput>;
export type AgentSkill = Static<typeof SkillSchema>;
export type IssuedToken = Static<typeof IssuedTokenSchema>;
export type IssueTokenOptions = Static<typeof IssueTokenInput>;
/** A token as `tokens(agentId)` lists it: never its secret. */
export type TokenSummary = Static<typeof TokenSummarySchema>;
export type Session = Static<typeof SessionSchema>;
export type Room = Static<typeof RoomSchema>;
export type NewRoom = Static<typeof CreateRoomInput>;
export type Membership = Static<typeof MembershipSchema>;
export type RoomMember = Static<typeof RoomMembersSchema>['members'][number];
export type ReadCursor = Static<typeof ReadCursorSchema>;
/** The REST Message: what `on('message')` and `send` give. */
export type Message = Static<typeof MessageSchema>;
export type HistoryPage = Static<typeof HistoryPageSchema>;
/** An uploaded file: what `uploadFile` resolves with. */
export type FileInfo = Static<typeof FileSchema>;
export type SyncPage = Static<typeof SyncPageSchema>;
export type InboxPage = Static<typeof InboxPageSchema>;
/** `all` (the default) or `attention`: only the unread messages for the agent's attention. */
export type InboxFilter = ProtocolInboxFilter;
export type SearchPage = Static<typeof SearchPageSchema>;
export type Directory = Static<typeof DirectorySchema>;
export type Channel = Static<typeof ChannelSchema>;
export type NewChannel = Static<typeof CreateChannelInput>;
export type Post = Static<typeof PostSchema>;
export type PostPage = Static<typeof PostPageSchema>;
export type Thread = Static<typeof ThreadSchema>;
export type ToggleResult = Static<typeof ToggleResultSchema>;
export type Webhook = Static<typeof WebhookSchema>;
/** The 201 of a registration: the only answer that carries the signing `secret`. */
export type CreatedWebhook = Static<typeof CreatedWebhookSchema>;
export type NewWebhook = Static<typeof CreateWebhookInput>;
export type WebhookDelivery = Static<typeof DeliverySchema>;
export type ReactionList = Static<typeof ReactionListSchema>;
/** One record of the audit log (docs/protocol.md, Audit log). */
export type AuditRecord = Static<typeof AuditRecordSchema>;
export type AuditPage = Static<typeof AuditPageSchema>;
/** The filters and cursor of `audit()`, every one optional. */
export type AuditQuery = Static<typeof AuditQuerySchema>;

/** A message as WebSocket payloads carry it (`authorAgentId` where REST says `senderId`). */
export type WsMessage = Static<typeof WsMessageSchema>;
export type HelloAck = Static<typeof HelloAckSchema>;
export type PresenceUpdate = Static<typeof PresenceUpdateSchema>;
export type WsError = Static<typeof WsErrorSchema>;
/** A message's thread (`thread(room, messageId)`): its root and a page of its replies. */
export type MessageThread = Static<typeof ThreadPageSchema>;
/** `message:updated`: a message was edited (its new body). */
export type MessageUpdated = Static<typeof MessageUpdatedSchema>;
/** low, normal, high or urgent (docs/acknowledgements.md). */
export type Importance = ProtocolImportance;
/** Who acknowledged a message (oldest first) and who has not yet (`acks(room, messageId)`). */
export type AckList = Static<typeof AckListSchema>;
/** `message:acked`: an agent acknowledged a message this agent sent. */
export type MessageAcked = Static<typeof MessageAckedSchema>;
/** A task (docs/tasks.md), with its history. */
export type Task = Static<typeof TaskSchema>;
export type TaskPage = Static<typeof TaskPageSchema>;
export type NewTask = Static<typeof CreateTaskInput>;
/** A lease on a resource in a room (docs/leases.md). */
export type Lease = Static<typeof LeaseSchema>;
export type LeaseState = ProtocolLeaseState;
/** `lease:updated`: a lease of one of the agent's rooms was granted, renewed, released or ran out. */
export interface LeaseUpdated { lease: Lease; state: LeaseState }
export type TaskState = ProtocolTaskState;
/** `message:deleted`: a message was deleted (it stays as a tombstone). */
export type MessageDeleted = Static<typeof MessageDeletedSchema>;
/** `message:delta`: text appended to an open streamed message (docs/streaming.md). */
export type MessageDelta = Static<typeof MessageDeltaSchema>;

/** `typing`, `working` or `idle` (`setActivity`). */
export type ActivityState = ProtocolActivityState;
/** `activity:update`: what a member of one of the agent's rooms shows it is doing (`expiresAt` null for `idle`). */
export type ActivityUpdate = Static<typeof ActivityUpdateSchema>;
/** A member's current activity, as `members(roomId)` items carry it (or null). */
export type Activity = Static<typeof ActivitySchema>;

/** Every client event of the `/agents` namespace: its payload (without `requestId`) and its acknowledgement. */
export interface WsRequests {
  'room:join': { payload: Omit<Static<typeof RoomRefPayload>, 'requestId'>; ack: Static<typeof AckOkSchema> };
  'room:leave': { payload: Omit<Static<typeof RoomRefPayload>, 'requestId'>; ack: Static<typeof AckOkSchema> };
  'room:list': { payload: Omit<Static<typeof RoomListPayload>, 'requestId'>; ack: Static<typeof RoomListAckSchema> };
  'room:sync': { payload: Omit<Static<typeof SyncPayload>, 'requestId'>; ack: Static<typeof SyncAckSchema> };
  'room:read': { payload: Omit<Static<typeof ReadPayload>, 'requestId'>; ack: ReadCursor };
  'message:send': { payload: Omit<Static<typeof SendPayload>, 'requestId'>; ack: Static<typeof SendAckSchema> };
  'message:history': { payload: Omit<Static<typeof HistoryPayload>, 'requestId'>; ack: Static<typeof HistoryAckSchema> };
  'message:thread': { payload: Omit<Static<typeof ThreadPayload>, 'requestId'>; ack: Static<typeof ThreadAckSchema> };
  'dm:open': { payload: Omit<Static<typeof DmOpenPayload>, 'requestId'>; ack: Static<typeof DmOpenAckSchema> };
  'activity:set': { payload: Omit<Static<typeof ActivitySetPayload>, 'requestId'>; ack: Static<typeof AckOkSchema> };
  'task:move': { payload: Omit<Static<typeof TaskMovePayload>, 'requestId'>; ack: Static<typeof TaskMoveAckSchema> };
  'message:ack': { payload: Omit<Static<typeof MessageAckPayload>, 'requestId'>; ack: Static<typeof MessageAckAckSchema> };
}
export type WsRequestName = keyof WsRequests;
