import type { TaskKind, TaskState } from '@agent-messaging/protocol';

/**
 * A stored message as the domain sees it (REST items are this object; WebSocket items rename
 * `senderId` to `authorAgentId`, see realtime/protocol.ts). Its own module, so that stores,
 * services and the events port all depend on it without depending on each other.
 */
/** A file a message carries (docs/protocol.md, Messages). */
export interface Attachment {
  id: string;
  name: string;
  contentType: string;
  size: number;
  sha256: string;
}

/** `task` on a message: the state is the one the move that posted it set (docs/tasks.md). */
export interface MessageTask {
  id: string;
  kind: TaskKind;
  title: string;
  state: TaskState;
}

export interface Message {
  id: string;
  roomId: string;
  senderId: string;
  body: string;
  createdAt: string;
  /** Per room, from 1, gapless, in commit order (assigned in the insert's transaction). */
  seq: number;
  mentions?: string[];
  replyTo?: string;
  clientMsgId?: string;
  /** The root of the thread this message replies in; null when it is not a reply (docs/threads-and-edits.md). */
  threadId: string | null;
  /** Only on a message that is not a reply: its replies (deleted ones included), and the newest one's time. */
  replyCount?: number;
  lastReplyAt?: string | null;
  /** Null until edited / deleted; a deleted message is a tombstone (body ""). */
  editedAt: string | null;
  deletedAt: string | null;
  /** The send's JSON object; null when none (and once deleted). */
  data: Record<string, unknown> | null;
  /** The files the send gave, in its order; [] when none. */
  attachments: Attachment[];
  /** The task whose creation or move posted it, with the state that move set; null when none (docs/tasks.md). */
  task: MessageTask | null;
}
