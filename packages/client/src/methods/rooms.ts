import { ClientBase, enc } from '../client-base.js';
import { AmsError } from '../errors.js';
import type { ActivityState, Membership, NewRoom, Room, RoomMember } from '../types.js';

// Rooms, their members and what members show they are doing (docs/client.md, Rooms and Activity).
// Direct rooms are opened with messages (`openDirectRoom`, `dm` in methods/messages.ts).

export abstract class RoomMethods extends ClientBase {
  /** The rooms the agent sees (strict mode: its own; admins: all), with its read state in its rooms. */
  async rooms(): Promise<Room[]> {
    const { rooms } = await this.http.request<{ rooms: Room[] }>('GET', '/api/v1/rooms');
    for (const r of rooms) this.slugIds.set(r.slug, r.id);
    return rooms;
  }

  /** Creates a room (admin); the agent becomes a member, and so do `members` (ids or names). */
  async createRoom(room: NewRoom): Promise<Room> {
    const body = room.members === undefined ? room : { ...room, members: await this.agentIdsOf(room.members) };
    return this.http.request('POST', '/rooms', { body });
  }

  /** Adds an agent (its id or name) to a room. */
  async addMember(roomId: string, agent: string): Promise<Membership> {
    return this.http.request('POST', `/rooms/${enc(roomId)}/members`, { body: { agentId: await this.agentId(agent) } });
  }

  /** Removes an agent (its id or name) from a room. */
  async removeMember(roomId: string, agent: string): Promise<void> {
    await this.http.request('DELETE', `/rooms/${enc(roomId)}/members/${enc(await this.agentId(agent))}`);
  }

  /**
   * Sets a group room's retention (`retentionDays`: whole days 1..36500, null for the service's
   * RETENTION_DAYS) and legal hold (true: the retention sweep leaves it alone). Admins; docs/retention.md.
   */
  async updateRoom(room: string, changes: { retentionDays?: number | null; legalHold?: boolean }): Promise<Room> {
    return this.http.request('PATCH', `/api/v1/rooms/${enc(await this.roomId(room))}`, { body: changes });
  }

  /**
   * A room's export (`ndjson`: a `{room}` line, then one message a line in seq order; `markdown`: a
   * transcript), as a stream of bytes to write where it goes: it is never held whole in memory.
   * Admins, or members with messages:read (docs/retention.md, Export).
   */
  async exportRoom(room: string, format: 'ndjson' | 'markdown' = 'ndjson'): Promise<ReadableStream<Uint8Array>> {
    const response = await this.http.raw('GET', `/api/v1/rooms/${enc(await this.roomId(room))}/export?format=${format}`);
    if (response.body === null) throw new AmsError('NETWORK_ERROR', 'the export has no body');
    return response.body;
  }

  /** The members of a room, with whether each is online. */
  async members(roomId: string): Promise<RoomMember[]> {
    return (await this.http.request<{ members: RoomMember[] }>('GET', `/api/v1/rooms/${enc(roomId)}/members`)).members;
  }

  /**
   * Shows the room's members what the agent is doing: `typing` (lasts 8 s), `working` (120 s, with
   * `text` such as "reading the logs") or `idle`, until set again (docs/client.md, Activity). Over the
   * WebSocket (`activity:set`, acknowledged) while connected: the state ends with the agent's last
   * socket. Without a connection, `POST /api/v1/rooms/:id/activity`: the state lasts its time.
   */
  async setActivity(roomId: string, state: ActivityState, text?: string): Promise<void> {
    const payload = { state, ...(text === undefined ? {} : { text }) };
    if (this.socket?.connected) {
      await this.request('activity:set', { roomId, ...payload });
      return;
    }
    await this.http.request('POST', `/api/v1/rooms/${enc(roomId)}/activity`, { body: payload });
  }
}
