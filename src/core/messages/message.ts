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
}
