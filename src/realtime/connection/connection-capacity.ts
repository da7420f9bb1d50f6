import { readFileSync } from 'node:fs';

/**
 * How many WebSocket connections this process can hold: each one is a file descriptor, and the
 * process may open at most its RLIMIT_NOFILE soft limit of them (Node raises the soft limit to the
 * hard one at start, so the value read in the process is the one that applies). Past it, accept()
 * fails with EMFILE: clients see a connection that hangs or resets and the server logs accept
 * errors, so the service refuses a handshake before that point with a clear error instead
 * (docs/deployment.md, "File descriptors and connections").
 */

/**
 * Descriptors kept for everything that is not an agent's socket: the database pool or SQLite's
 * files, Redis, the listening socket, REST requests, log and pipe descriptors, and the handshakes
 * being refused.
 */
export const RESERVED_DESCRIPTORS = 128;
/** Below this many connections the start-up log warns: a default `ulimit -n` of 1024 is that low. */
export const LOW_CAPACITY = 10_000;

export interface ConnectionCapacity {
  /** The soft limit on open files; null where it cannot be read (not Linux). */
  openFileLimit: number | null;
  /** Connections admitted at most; null: unknown, none refused for this reason. */
  maxConnections: number | null;
}

/**
 * The soft "Max open files" of /proc/self/limits ("unlimited" is returned as null: no limit to
 * enforce). Null when the file is missing (not Linux) or unreadable.
 */
export function readOpenFileLimit(text?: string): number | null {
  let limits = text;
  if (limits === undefined) {
    try {
      limits = readFileSync('/proc/self/limits', 'utf8');
    } catch {
      return null;
    }
  }
  const line = limits.split('\n').find((l) => l.startsWith('Max open files'));
  const soft = line?.slice('Max open files'.length).trim().split(/\s+/)[0];
  if (soft === undefined || !/^\d+$/.test(soft)) return null;
  return Number(soft);
}

export function connectionCapacity(openFileLimit: number | null = readOpenFileLimit()): ConnectionCapacity {
  return { openFileLimit, maxConnections: openFileLimit === null ? null : Math.max(0, openFileLimit - RESERVED_DESCRIPTORS) };
}
