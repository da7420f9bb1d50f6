import type { Logger } from 'pino';
import type { RoomsService } from '../../core/rooms/rooms.service.js';
import { ROOM_PREFIX, type AgentsNamespace, type AgentSocket } from '../protocol.js';
import type { Subscriptions } from './room-subscriptions.js';

/** Sockets per round trip: two queries (memberships, lastSeqs) per batch, whatever the rooms. */
const BATCH = 500;
/** After a check failed (database away), the next one comes this soon rather than at the interval. */
const RETRY_MS = 2000;
const PERIODIC = 'periodic';

export interface PositionCheckOptions {
  nsp: AgentsNamespace;
  rooms: RoomsService;
  subscriptions: Subscriptions;
  logger: Logger;
  /** Period of the check (config.ws.positionCheckIntervalMs); 0 switches the periodic part off. */
  intervalMs: number;
}

export interface CheckOutcome {
  sockets: number;
  /** Room subscriptions added (a membership the socket was not following) or removed (no longer a member). */
  joined: number;
  left: number;
  /** Sockets sent `room:positions`. */
  told: number;
}

export interface PositionCheck {
  /** Checks every subscribed socket of this node now (after an interruption); one run at a time. */
  checkNow(reason: string): Promise<CheckOutcome>;
  /**
   * The database is failing: a run as soon as it answers again (tried every RETRY_MS). Cheap to call
   * on every failed query: at most one run is pending.
   */
  databaseInterrupted(): void;
  stop(): void;
}

/** Whether `told` names exactly the rooms of `positions`, each at the same `lastSeq`. */
const samePositions = (told: Record<string, number> | undefined, positions: Record<string, number>, rooms: number): boolean => {
  if (told === undefined || Object.keys(told).length !== rooms) return false;
  for (const roomId in positions) if (told[roomId] !== positions[roomId]) return false;
  return true;
};

const roomsOf = (socket: AgentSocket): string[] => {
  const out: string[] = [];
  for (const room of socket.rooms) if (room.startsWith(ROOM_PREFIX)) out.push(room.slice(ROOM_PREFIX.length));
  return out;
};

/**
 * The position check (docs/catch-up.md "Position checks"). For every socket of this node whose setup
 * finished: (1) its Socket.IO rooms are made equal to its agent's memberships allowed by its token
 * (joins a membership it is not following, e.g. one added while this node's bus was away, leaves one
 * that ended), except rooms the client left itself with `room:leave`; (2) it receives
 * `room:positions {lastSeqs}` for the rooms it is subscribed to, so a client that missed a broadcast
 * (the bus or the adapter lost it) sees a `lastSeq` above what it processed and syncs.
 *
 * Runs every `intervalMs`, and at once when the caller says the node's cluster bus or database came
 * back. A run that fails (database away) is retried after RETRY_MS until one succeeds.
 */
export function startPositionChecks(options: PositionCheckOptions): PositionCheck {
  const { nsp, rooms, subscriptions, logger, intervalMs } = options;
  let running: Promise<CheckOutcome> | undefined;
  let again: string | undefined;
  let retry: NodeJS.Timeout | undefined;
  let stopped = false;

  // A repair's socket.join/leave is synchronous; its presence part may fail (Redis away): logged,
  // and neither the other repairs nor the positions wait on it.
  const tolerate = (repair: Promise<void>): Promise<void> => repair.catch((err: unknown) => {
    logger.warn({ err: { message: err instanceof Error ? err.message : String(err) } }, 'position check: presence update of a repair failed');
  });

  /**
   * `everyone`: after an interruption every socket gets its positions. A periodic run sends them
   * only to a socket whose rooms or positions differ from what it was last told: a broadcast it
   * missed numbered a message above that, and an idle socket (most of a large fleet) costs no frame.
   */
  const checkBatch = async (sockets: AgentSocket[], outcome: CheckOutcome, everyone: boolean): Promise<void> => {
    const wanted = await rooms.roomIdsForSockets(sockets.map((s) => s.data.principal));
    const repairs: Promise<void>[] = [];
    sockets.forEach((socket, i) => {
      if (!socket.connected) return;
      const want = new Set(wanted[i]);
      const have = new Set(roomsOf(socket));
      const left = socket.data.leftRooms;
      for (const roomId of want) {
        if (have.has(roomId) || left?.has(roomId)) continue;
        outcome.joined++;
        repairs.push(tolerate(subscriptions.join(socket, roomId)));
      }
      for (const roomId of have) {
        if (want.has(roomId)) continue;
        outcome.left++;
        repairs.push(tolerate(subscriptions.leave(socket, roomId)));
      }
    });
    await Promise.all(repairs);
    const union = new Set<string>();
    for (const socket of sockets) for (const roomId of roomsOf(socket)) union.add(roomId);
    const lastSeqs = await rooms.lastSeqs([...union]);
    for (const socket of sockets) {
      if (!socket.connected) continue;
      const positions: Record<string, number> = {};
      let count = 0;
      for (const roomId of roomsOf(socket)) {
        positions[roomId] = lastSeqs[roomId] ?? 0;
        count++;
      }
      if (count === 0 || (!everyone && samePositions(socket.data.toldPositions, positions, count))) continue;
      socket.data.toldPositions = positions;
      outcome.told++;
      socket.emit('room:positions', { lastSeqs: positions });
    }
  };

  const run = async (reason: string): Promise<CheckOutcome> => {
    const outcome: CheckOutcome = { sockets: 0, joined: 0, left: 0, told: 0 };
    const sockets = [...nsp.sockets.values()].filter((s) => s.connected && s.data.subscribed === true);
    outcome.sockets = sockets.length;
    for (let i = 0; i < sockets.length && !stopped; i += BATCH) await checkBatch(sockets.slice(i, i + BATCH), outcome, reason !== PERIODIC);
    if (outcome.joined > 0 || outcome.left > 0) logger.warn({ reason, ...outcome }, 'position check repaired room subscriptions');
    return outcome;
  };

  const scheduleRetry = (reason: string): void => {
    if (stopped || retry !== undefined) return;
    retry = setTimeout(() => {
      retry = undefined;
      void checkNow(reason);
    }, RETRY_MS).unref();
  };

  const checkNow = (reason: string): Promise<CheckOutcome> => {
    if (running) {
      // A run already under way may have read the memberships before the interruption ended: one more after it.
      again = reason;
      return running;
    }
    clearTimeout(retry);
    retry = undefined;
    running = run(reason).then(
      (outcome) => outcome,
      (err: unknown) => {
        logger.warn({ reason, err: { message: err instanceof Error ? err.message : String(err) } }, 'position check failed; retrying');
        scheduleRetry(`retry after ${reason}`);
        return { sockets: 0, joined: 0, left: 0, told: 0 };
      },
    ).finally(() => {
      running = undefined;
      if (again !== undefined && !stopped) {
        const next = again;
        again = undefined;
        void checkNow(next);
      }
    });
    return running;
  };

  const timer = intervalMs > 0 ? setInterval(() => void checkNow(PERIODIC), intervalMs).unref() : undefined;

  return {
    checkNow,
    databaseInterrupted: () => scheduleRetry('database interrupted'),
    stop() {
      stopped = true;
      clearInterval(timer);
      clearTimeout(retry);
    },
  };
}

