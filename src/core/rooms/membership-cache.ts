/**
 * Memberships known to hold, so that a `message:send` is authorised without a database round trip
 * each time. Only positive answers are kept (a refusal is rare and cheap to ask again); every
 * removal forgets its entry once committed, and a lookup that started before a removal cannot store
 * its now stale answer afterwards (the generation moved on).
 *
 * On one node every change goes through this process, so the cache is exact. With several nodes a
 * removal made elsewhere arrives through the event bridge (cluster/event-bridge.ts, milliseconds);
 * while the bus is not live (`trusted` says false) the cache answers nothing, it is cleared when the
 * bus is live again, and entries expire after `ttlMs` so that even a lost announcement cannot be
 * trusted for long.
 */
export class MembershipCache {
  private readonly rooms = new Map<string, Map<string, number>>();
  private entries = 0;
  private generation = 0;
  private readonly maxEntries: number;
  private readonly ttlMs: number;
  private readonly trusted: () => boolean;

  /** `trusted`: whether removals made on other nodes are known to reach this one now (always, on one node). */
  constructor(options: { maxEntries?: number; ttlMs?: number; trusted?: () => boolean } = {}) {
    this.maxEntries = options.maxEntries ?? 100_000;
    this.ttlMs = options.ttlMs ?? Infinity;
    this.trusted = options.trusted ?? (() => true);
  }

  has(roomId: string, agentId: string): boolean {
    if (!this.trusted()) return false;
    const expires = this.rooms.get(roomId)?.get(agentId);
    return expires !== undefined && expires > Date.now();
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
    if (!members) this.rooms.set(roomId, (members = new Map()));
    if (!members.has(agentId)) this.entries++;
    members.set(agentId, Date.now() + this.ttlMs);
  }

  /** After a removal committed (here or, announced, on another node). */
  forget(roomId: string, agentId: string): void {
    this.generation++;
    const members = this.rooms.get(roomId);
    if (members?.delete(agentId)) this.entries--;
  }

  /** Forgets everything (e.g. after removals may have been missed). */
  clear(): void {
    this.generation++;
    this.rooms.clear();
    this.entries = 0;
  }
}

