import type { ColumnType, Generated, Kysely, Transaction } from 'kysely';

/**
 * Table types, composed into one DB interface. Timestamps are ISO strings on the way in, and both
 * engines return them as ISO strings (the PostgreSQL pool parses timestamptz that way, see
 * database.ts); reads still go through toIso (values.ts), which normalises either form. JSON
 * columns are written as JSON text and come back as JSON text from both engines: read them
 * through fromJson.
 */
type Timestamp = ColumnType<string | Date, string, string>;
type Json = ColumnType<unknown, string, string>;

export interface ServiceSettingsTable {
  key: string;
  value: string;
}

export interface AgentsTable {
  id: string;
  name: string;
  display_name: string;
  role: 'admin' | 'agent';
  created_at: Timestamp;
  /** Null while the agent is active (migration 003). */
  disabled_at: ColumnType<string | Date | null, string | null | undefined, string | null>;
  /** What the agent says of itself, "" until set (migration 015). */
  description: ColumnType<string, string | undefined, string>;
  /** Its skills, a JSON array of {id, name, description, tags}, [] until set (migration 015). */
  skills: ColumnType<unknown, string | undefined, string>;
}

export interface ApiTokensTable {
  id: string;
  agent_id: string;
  prefix: string;
  secret_hash: string;
  scopes: Json;
  expires_at: ColumnType<string | Date | null, string | null, string | null>;
  revoked_at: ColumnType<string | Date | null, string | null, string | null>;
  created_at: Timestamp;
  /** Migration 007: the last session exchange, to the minute (tokens.store.ts). */
  last_used_at: ColumnType<string | Date | null, string | null | undefined, string | null>;
}

export interface RoomsTable {
  id: string;
  slug: string;
  name: string;
  created_by: string;
  created_at: Timestamp;
  /** The room's latest message `seq`, 0 without messages (migration 004). */
  last_seq: Generated<number>;
  /** `group` or `direct` (migration 009). */
  kind: Generated<RoomKind>;
  /** A direct room's two member ids, sorted and joined by `:`; null for a group room (migration 009). */
  direct_key: string | null;
}

export type RoomKind = 'group' | 'direct';

export interface RoomMembersTable {
  room_id: string;
  agent_id: string;
  joined_at: Timestamp;
  /** The member's read cursor: messages with a higher `seq` are unread (migration 004). */
  read_seq: Generated<number>;
}

export interface MessagesTable {
  id: string;
  room_id: string;
  sender_id: string;
  body: string;
  mentions: ColumnType<unknown, string | null, string | null>;
  reply_to: string | null;
  client_msg_id: string | null;
  created_at: Timestamp;
  /** Per room, from 1, gapless, in commit order (migration 004). */
  seq: number;
  /** The root of the reply's thread; null when not a reply (migration 010, as the four below). */
  thread_id: string | null;
  /** On a root: its replies (deleted ones included) and the newest one's time. */
  reply_count: Generated<number>;
  last_reply_at: Timestamp | null;
  edited_at: Timestamp | null;
  deleted_at: Timestamp | null;
  /** The message's JSON object, as JSON text; null when none (migration 012). */
  data: ColumnType<unknown, string | null | undefined, string | null>;
  /** `{id, kind, title, state}` of the task the message was posted for, as JSON text; null when none (migration 013). */
  task: ColumnType<unknown, string | null | undefined, string | null>;
}

/**
 * The search index (migration 005): one row per message that has words, `words` being its folded
 * words joined by spaces (core/search-text.ts). SQLite: an FTS5 table (its hidden column
 * `message_search` takes MATCH). PostgreSQL: a table with a generated tsvector column `tsv` under
 * a GIN index. Both are queried with raw SQL for those parts, so they are not typed here.
 */
export interface MessageSearchTable {
  message_id: string;
  words: string;
}

/** Which agents a message is for the attention of (migration 011; core/messages/attention.ts). */
export interface MessageAttentionTable {
  agent_id: string;
  room_id: string;
  seq: number;
  message_id: string;
}

export interface AuditLogTable {
  id: string;
  event: string;
  actor_id: string | null;
  subject_id: string | null;
  detail: Json;
  created_at: Timestamp;
}

export interface SocialChannelsTable {
  id: string;
  slug: string;
  name: string;
  created_at: Timestamp;
}

export interface SocialPostsTable {
  id: string;
  channel_id: string;
  author_agent_id: string;
  body: string;
  parent_post_id: string | null;
  reply_count: Generated<number>;
  created_at: Timestamp;
}

export interface SocialReactionsTable {
  post_id: string;
  agent_id: string;
  emoji: string;
  created_at: Timestamp;
}

type NullableTimestamp = ColumnType<string | Date | null, string | null | undefined, string | null>;

/** Webhook endpoints (migration 006). `rooms`: the creating JWT's room restriction, null for none. */
export interface WebhookEndpointsTable {
  id: string;
  agent_id: string;
  url: string;
  events: Json;
  mode: 'offline' | 'always';
  /** As issued (whsec_...): it signs the deliveries. Never returned after creation, never logged. */
  secret: string;
  rooms: ColumnType<unknown, string | null, string | null>;
  created_at: Timestamp;
  disabled_at: NullableTimestamp;
}

/** The webhook outbox (migration 006): one row per message and endpoint. */
export interface WebhookDeliveriesTable {
  id: string;
  endpoint_id: string;
  message_id: string;
  event: string;
  status: 'pending' | 'delivered' | 'failed';
  /** Attempts made so far. */
  attempt: Generated<number>;
  /** When it may be claimed next (a claim moves it past the attempt's timeout). */
  next_attempt_at: Timestamp;
  error: string | null;
  created_at: Timestamp;
  delivered_at: NullableTimestamp;
}

/** Uploaded files (migration 012; core/files/). Invisible while `completed_at` is null. */
export interface FilesTable {
  id: string;
  name: string;
  content_type: string;
  size: ColumnType<number | string, number | undefined, number>;
  sha256: string | null;
  uploader_id: string;
  created_at: Timestamp;
  completed_at: NullableTimestamp;
}

/** A file's bytes, chunk `n` (from 0) of its upload (migration 012). */
export interface FileChunksTable {
  file_id: string;
  n: number;
  bytes: Uint8Array;
}

/** Each uploader's stored bytes, for the storage quota (migration 016; core/files/). */
export interface FileUsageTable {
  agent_id: string;
  bytes: ColumnType<number | string, number | undefined, number>;
}

/** The files a message carries, in the order given (migration 012). */
export interface MessageAttachmentsTable {
  message_id: string;
  position: number;
  file_id: string;
}

/** Tasks (migration 013; core/tasks/). `terminal` is 1 in the four terminal states. */
export interface TasksTable {
  id: string;
  kind: string;
  title: string;
  requester_id: string;
  assignee_id: string;
  room_id: string;
  state: string;
  terminal: number;
  result: ColumnType<unknown, string | null, string | null>;
  due_at: NullableTimestamp;
  client_task_id: string | null;
  version: number;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/** A task's states in order, `n` from 0 (migration 013). */
export interface TaskHistoryTable {
  task_id: string;
  n: number;
  state: string;
  at: Timestamp;
  by_id: string | null;
  message_id: string | null;
}

/** What the OAuth authorization server keeps, keyed by a hash of kind and id (migration 021). */
export interface OAuthRecordsTable {
  key: string;
  model: string;
  grant_id: string | null;
  uid: string | null;
  payload: string;
  /** Epoch milliseconds. */
  expires_at: ColumnType<number | string | null, number | null, number | null>;
  consumed_at: ColumnType<number | string | null, number | null | undefined, number | null>;
}

/** An agent's OAuth grants (migration 021). `scopes`: a JSON array of scope actions. */
export interface OAuthGrantsTable {
  id: string;
  grant_id: string;
  agent_id: string;
  token_id: string;
  client_id: string;
  client_name: string;
  scopes: string;
  created_at: Timestamp;
  last_used_at: NullableTimestamp;
  revoked_at: NullableTimestamp;
}

export interface DB {
  service_settings: ServiceSettingsTable;
  agents: AgentsTable;
  api_tokens: ApiTokensTable;
  rooms: RoomsTable;
  room_members: RoomMembersTable;
  messages: MessagesTable;
  message_search: MessageSearchTable;
  message_attention: MessageAttentionTable;
  audit_log: AuditLogTable;
  social_channels: SocialChannelsTable;
  social_posts: SocialPostsTable;
  social_reactions: SocialReactionsTable;
  webhook_endpoints: WebhookEndpointsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  files: FilesTable;
  file_chunks: FileChunksTable;
  file_usage: FileUsageTable;
  message_attachments: MessageAttachmentsTable;
  tasks: TasksTable;
  task_history: TaskHistoryTable;
  oauth_records: OAuthRecordsTable;
  oauth_grants: OAuthGrantsTable;
}

/** What a store function runs its queries on: the database or one of its transactions. */
export type Db = Kysely<DB> | Transaction<DB>;
