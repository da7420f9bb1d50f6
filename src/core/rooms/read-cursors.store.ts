import type { Db } from '../../store/schema.js';

/** A membership's read cursor and what it leaves unread (docs/catch-up.md). */
export interface ReadState {
  roomId: string;
  readSeq: number;
  /** Messages of the room with `seq > readSeq` sent by someone else. */
  unreadCount: number;
  /** Those of them for the member's attention (core/messages/attention.ts), and the read ones awaiting its acknowledgement. */
  attentionCount: number;
}

/** A new membership starts at the room's lastSeq: old history is not unread. */
export async function startReadCursorAtLastSeq(db: Db, roomId: string, agentId: string): Promise<void> {
  await db
    .updateTable('room_members')
    .set((eb) => ({ read_seq: eb.selectFrom('rooms').select('rooms.last_seq').where('rooms.id', '=', roomId) }))
    .where('room_id', '=', roomId)
    .where('agent_id', '=', agentId)
    .execute();
}

/** Moves the cursor forward to `seq`; a lower one changes nothing. */
export async function advanceReadCursor(db: Db, roomId: string, agentId: string, seq: number): Promise<void> {
  await db
    .updateTable('room_members')
    .set({ read_seq: seq })
    .where('room_id', '=', roomId)
    .where('agent_id', '=', agentId)
    .where('read_seq', '<', seq)
    .execute();
}

/**
 * The read state of each membership of the agent (one room when `roomId` is given). The count
 * walks the (room_id, seq) index from the cursor on, so it costs what is unread, not the history.
 */
export async function findReadStates(db: Db, agentId: string, roomId?: string): Promise<ReadState[]> {
  let query = db
    .selectFrom('room_members as rm')
    .select(['rm.room_id', 'rm.read_seq'])
    .select((eb) =>
      eb
        .selectFrom('messages as m')
        .select((e) => e.fn.countAll<number | string>().as('n'))
        .whereRef('m.room_id', '=', 'rm.room_id')
        .whereRef('m.seq', '>', 'rm.read_seq')
        .whereRef('m.sender_id', '<>', 'rm.agent_id')
        .as('unread_count'),
    )
    .select((eb) =>
      eb
        .selectFrom('message_attention as a')
        .select((e) => e.fn.countAll<number | string>().as('n'))
        .whereRef('a.agent_id', '=', 'rm.agent_id')
        .whereRef('a.room_id', '=', 'rm.room_id')
        .whereRef('a.seq', '>', 'rm.read_seq')
        .as('attention_count'),
    )
    // Read messages awaiting the agent's acknowledgement stay for its attention (docs/acknowledgements.md).
    .select((eb) =>
      eb
        .selectFrom('message_acks as k')
        .innerJoin('messages as m', 'm.id', 'k.message_id')
        .select((e) => e.fn.countAll<number | string>().as('n'))
        .whereRef('k.agent_id', '=', 'rm.agent_id')
        .whereRef('k.room_id', '=', 'rm.room_id')
        .where('k.acked_at', 'is', null)
        .whereRef('m.seq', '<=', 'rm.read_seq')
        .as('read_pending_acks'),
    )
    .where('rm.agent_id', '=', agentId);
  if (roomId !== undefined) query = query.where('rm.room_id', '=', roomId);
  const rows = await query.execute();
  return rows.map((row) => ({
    roomId: row.room_id, readSeq: Number(row.read_seq), unreadCount: Number(row.unread_count ?? 0),
    attentionCount: Number(row.attention_count ?? 0) + Number(row.read_pending_acks ?? 0),
  }));
}
