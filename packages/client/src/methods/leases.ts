import { ClientBase, enc } from '../client-base.js';
import { AmsError } from '../errors.js';
import type { Lease } from '../types.js';

// Leases on resources (docs/leases.md, docs/client.md); `leaseUpdated` events come through `on`.

/** The leases in the way of a refused `acquireLease` (a CONFLICT's `details.conflicts`); empty for any other error. */
export function leaseConflicts(err: unknown): Lease[] {
  if (!(err instanceof AmsError) || err.code !== 'CONFLICT' || err.details?.conflicts === undefined) return [];
  try {
    return JSON.parse(err.details.conflicts) as Lease[];
  } catch {
    return [];
  }
}

export abstract class LeaseMethods extends ClientBase {
  /**
   * Takes a lease on `resource` in `room` (id or slug): "I am changing this" for `ttlSeconds` (5..86400,
   * default 3600). A CONFLICT names the leases in the way (`leaseConflicts(err)`).
   */
  async acquireLease(room: string, lease: { resource: string; exclusive?: boolean; ttlSeconds?: number; reason?: string; clientLeaseId?: string }): Promise<Lease> {
    return this.http.request('POST', `/api/v1/rooms/${enc(await this.roomId(room))}/leases`, { body: lease });
  }

  /** The live leases of a room, oldest first; with `resource`, those overlapping it. */
  async leases(room: string, options: { resource?: string } = {}): Promise<Lease[]> {
    const page = await this.http.request<{ leases: Lease[] }>('GET', `/api/v1/rooms/${enc(await this.roomId(room))}/leases`, { query: { resource: options.resource } });
    return page.leases;
  }

  /** Extends a lease the agent holds to now + `ttlSeconds`. */
  async renewLease(room: string, leaseId: string, options: { ttlSeconds?: number } = {}): Promise<Lease> {
    return this.http.request('POST', `/api/v1/rooms/${enc(await this.roomId(room))}/leases/${enc(leaseId)}/renew`, { body: options });
  }

  /** Ends a lease the agent holds (an admin: any). */
  async releaseLease(room: string, leaseId: string): Promise<void> {
    await this.http.request('DELETE', `/api/v1/rooms/${enc(await this.roomId(room))}/leases/${enc(leaseId)}`);
  }
}
