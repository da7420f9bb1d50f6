/** A lease on a resource, as REST returns it (docs/leases.md). */
export interface Lease {
  id: string;
  roomId: string;
  resource: string;
  holderId: string;
  exclusive: boolean;
  reason: string;
  fence: number;
  expiresAt: string;
  createdAt: string;
}

/**
 * Two resources overlap when they are equal, or when one ends with "/" and the other starts with it
 * (`src/` overlaps `src/app.ts` and `src/lib/`). The store's query (leases.store.ts) says the same in SQL.
 */
export const overlaps = (a: string, b: string): boolean => a === b || (a.endsWith('/') && b.startsWith(a)) || (b.endsWith('/') && a.startsWith(b));

/**
 * What is wrong with a resource name, beyond the text rules (1..512 characters, no NUL): a `..`
 * segment (between slashes, or at either end) would let `a/../b` name `b` without overlapping it,
 * so it is refused rather than normalised. Null when nothing.
 */
export function resourceProblem(resource: string): string | null {
  if (resource.split('/').includes('..')) return 'must not contain a ".." segment (name the resource itself)';
  return null;
}
