import { describe, expect, it } from 'vitest';
import { RoomStreams, type SyncSource } from '../../packages/client/src/room-streams.js';
import type { Message, WsMessage } from '../../packages/client/src/types.js';
import { waitUntil } from '../helpers/wait.js';

const ROOM = '01900000-0000-7000-8000-000000000001';
const msg = (seq: number, roomId = ROOM): WsMessage => ({ id: `m${seq}`, roomId, authorAgentId: 'a', body: `b${seq}`, createdAt: '2026-11-25T00:00:00.000Z', seq, threadId: null, editedAt: null, deletedAt: null, data: null, attachments: [], task: null, streaming: false, streamEnd: null, importance: 'normal', ack: null });

/** A connection whose room:sync answers from `stored` (pages of `limit`), recording each call. */
function source(stored: WsMessage[], calls: number[] = []): SyncSource & { alive: boolean } {
  return {
    alive: true,
    active() {
      return this.alive;
    },
    async sync(_roomId, afterSeq, limit) {
      calls.push(afterSeq);
      const after = stored.filter((m) => m.seq > afterSeq);
      return { messages: after.slice(0, limit), lastSeq: stored.length, hasMore: after.length > limit };
    },
  };
}

function streams(initial: Record<string, number> = {}): { rooms: RoomStreams; delivered: Message[]; errors: unknown[] } {
  const delivered: Message[] = [];
  const errors: unknown[] = [];
  return { rooms: new RoomStreams(initial, (m) => delivered.push(m), (e) => errors.push(e)), delivered, errors };
}

describe('RoomStreams: exactly once, in seq order', () => {
  it('starts a new room at hello-ack lastSeq and delivers live messages in order as REST messages', async () => {
    const { rooms, delivered } = streams();
    const s = source([msg(1), msg(2)]);
    await rooms.connected({ [ROOM]: 2 }, s);
    rooms.live(msg(3), s);
    rooms.live(msg(3), s); // a repeat
    expect(delivered).toEqual([{ id: 'm3', roomId: ROOM, senderId: 'a', body: 'b3', createdAt: '2026-11-25T00:00:00.000Z', seq: 3, threadId: null, editedAt: null, deletedAt: null, data: null, attachments: [], task: null, streaming: false, streamEnd: null, importance: 'normal', ack: null }]);
    expect(rooms.lastSeqs()).toEqual({ [ROOM]: 3 });
  });

  it('a live message past a gap is held while room:sync fills the gap from the last seq delivered', async () => {
    const stored = [1, 2, 3, 4, 5, 6].map((n) => msg(n));
    const calls: number[] = [];
    const { rooms, delivered } = streams({ [ROOM]: 1 });
    const s = source(stored, calls);
    rooms.live(msg(5), s);
    rooms.live(msg(6), s);
    await waitUntil('the gap filled', () => delivered.length >= 5);
    expect(delivered.map((m) => m.seq)).toEqual([2, 3, 4, 5, 6]);
    expect(calls[0]).toBe(1);
  });

  it('resumes a saved position with paged room:sync and ignores live repeats of what it synced', async () => {
    const stored = Array.from({ length: 250 }, (_, i) => msg(i + 1));
    const calls: number[] = [];
    const { rooms, delivered } = streams({ [ROOM]: 10 });
    const s = source(stored, calls);
    await rooms.connected({ [ROOM]: 250 }, s);
    expect(calls).toEqual([10, 110, 210]);
    rooms.live(msg(250), s);
    expect(delivered.map((m) => m.seq)).toEqual(stored.slice(10).map((m) => m.seq));
  });

  it('a catch-up interrupted by a lost connection is taken up by the next one without a repeat', async () => {
    const stored = [1, 2, 3, 4].map((n) => msg(n));
    const { rooms, delivered } = streams({ [ROOM]: 0 });
    const dead = source(stored);
    dead.alive = false;
    await rooms.connected({ [ROOM]: 4 }, dead); // gives up at once: its connection is gone
    expect(delivered).toEqual([]);
    await rooms.connected({ [ROOM]: 4 }, source(stored));
    expect(delivered.map((m) => m.seq)).toEqual([1, 2, 3, 4]);
  });

  it('a room first seen live starts with that message; a refused catch-up is reported', async () => {
    const other = '01900000-0000-7000-8000-000000000002';
    const { rooms, delivered, errors } = streams();
    const s = source([]);
    rooms.live(msg(7, other), s);
    expect(delivered.map((m) => m.seq)).toEqual([7]);
    const refusing: SyncSource = { active: () => true, sync: () => Promise.reject(Object.assign(new Error('no'), { code: 'FORBIDDEN' })) };
    rooms.live(msg(9, other), refusing);
    await waitUntil('the refused sync reported', () => errors.length >= 1);
    expect(errors).toHaveLength(1);
    expect(rooms.lastSeqs()).toEqual({ [other]: 7 });
  });
});
