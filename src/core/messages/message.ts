import type { MessageTask } from '../tasks/task.js';

/**
 * A stored message as the domain sees it (REST items are this object; WebSocket items rename
 * `senderId` to `authorAgentId`, see realtime/protocol.ts). Its own module, so that stores,
 * services and the events port all depend on it without depending on each other.
 */
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
  /** The task whose creation or move posted it, with the state that move set; null when none (docs/tasks.md). */
  task: MessageTask | null;
}
