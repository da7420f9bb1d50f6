import { expect } from 'vitest';
import type { Api, TestAgent } from './api.js';

/** A task as REST answers it, and the messages of its room that carry it. */
export interface TaskAndMessages {
  task: { id: string; state: string; roomId: string; history: { state: string; messageId: string | null }[] };
  /** Ids of the room's messages whose `task.id` is this task's, oldest first. */
  messageIds: string[];
}

/** The task (read by `reader`, one of its sides) and the messages of its room posted for it. */
export async function taskAndMessages(api: Api, reader: TestAgent, taskId: string): Promise<TaskAndMessages> {
  const got = await api.get(`/api/v1/tasks/${taskId}`, { jwt: reader.jwt });
  expect(got.status, JSON.stringify(got.body)).toBe(200);
  const task = got.body as TaskAndMessages['task'];
  const page = await api.get(`/api/v1/rooms/${task.roomId}/messages?limit=100`, { jwt: reader.jwt });
  expect(page.status, JSON.stringify(page.body)).toBe(200);
  const messages = page.body.messages as { id: string; task: { id: string } | null }[];
  return { task, messageIds: messages.filter((m) => m.task?.id === taskId).map((m) => m.id).reverse() };
}

/**
 * docs/tasks.md, "A move is one commit": every history entry names a message that exists, and every
 * message posted for the task is named by an entry (no move without its message, no message
 * without its move).
 */
export function expectOneCommitEach({ task, messageIds }: TaskAndMessages): void {
  expect(task.history.map((h) => h.messageId)).toEqual(messageIds);
}
