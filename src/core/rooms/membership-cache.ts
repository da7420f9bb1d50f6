/**
 * Memberships known to hold, so that a `message:send` is authorised without a database round trip
 * each time. Only positive answers are kept (a refusal is rare and cheap to ask again); every
 * removal forgets its entry once committed, and a lookup that started before a removal cannot store
 * its now stale answer afterwards (the generation moved on).
 *
 * Per process: exact only where every membership change goes through this process, i.e. on a single
 * node. With several nodes (REDIS_URL) the service runs without it and asks the database.
 */
export class MembershipCache {
  private readonly rooms = new Map<string, Set<string>>();
  private entries = 0;
  private generation = 0;

  constructor(private readonly maxEntries = 100_000) {}

  has(roomId: string, agentId: string): boolean {
    return this.rooms.get(roomId)?.has(agentId) ?? false;
  }

  /** Call before asking the database; pass the result to `remember`. */
  begin(): number {
    return this.generation;
  }

  /** Keeps a positive answer, unless a removal happened since `begin`. */
  remember(since: number, roomId: string, agentId: string): void {
    if (since !== this.generation) return;
    if (this.entries >= this.maxEntries) this.clear();
    let members = this.rooms.get(roomId);
    if (!members) this.rooms.set(roomId, (members = new Set()));
    if (!members.has(agentId)) {
      members.add(agentId);
      this.entries++;
    }
  }

  /** After a removal committed. */
  forget(roomId: string, agentId: string): void {
    this.generation++;
    const members = this.rooms.get(roomId);
    if (members?.delete(agentId)) this.entries--;
  }

  private clear(): void {
    this.rooms.clear();
    this.entries = 0;
  }
}
