import type { Kysely } from 'kysely';
import type { DB } from '../../store/schema.js';
import { nowIso } from '../../store/values.js';
import { checkTarget } from './ssrf-guard.js';
import { DELIVERY_TIMEOUT_MS, INTERRUPTED, isTimeout, postSigned } from './webhook-request.js';
import { findTask } from '../tasks/tasks.store.js';
import {
  claimDue, disableIfFailing, postponeEndpoint, recordAttempt, releaseClaims, type AttemptOutcome, type ClaimedDelivery, type ClaimPlan, type Trust,
} from './webhooks.store.js';

/**
 * Slots: attempts one node starts and has not yet seen wait long for an answer (docs/webhooks.md,
 * "Fairness"): a bound on the bodies being sent at once whatever the backlog.
 */
export const DELIVERIES_IN_FLIGHT_MAX = 64;
/** Of the slots, those untrusted endpoints (last attempt timed out, or one waiting now) may hold. */
export const UNTRUSTED_SLOTS_MAX = 16;
/**
 * Of the slots, those new and untrusted endpoints may hold together: the rest are kept for endpoints
 * that answered, which then never wait behind endpoints not yet found dead.
 */
export const UNPROVEN_SLOTS_MAX = 48;
/**
 * An attempt without an answer after this long leaves its slot (it keeps its connection until its
 * timeout) and makes its endpoint untrusted: endpoints that never answer, however many, hold slots
 * this long at most, not the whole answer time.
 */
export const SLOW_ATTEMPT_MS = 500;
/** Attempts in flight on one node, waiting ones included: a bound on its connections. */
export const ATTEMPTS_MAX = 1024;
/**
 * Attempts of one endpoint in flight on one node: enough for a receiver that answers; an untrusted
 * endpoint gets one, a probe.
 */
export const ENDPOINT_IN_FLIGHT_MAX = 4;
/** Consecutive timeouts of an endpoint that put it in back-off as a whole. */
export const TIMEOUTS_TO_BACK_OFF = 3;
/** The first back-off; each further timeout in a row doubles it, up to the longest. */
export const BACK_OFF_MS = 30_000;
export const BACK_OFF_MAX_MS = 15 * 60_000;
/** How often a node looks for due deliveries (retries, other nodes' messages, work left by a restart). */
const POLL_MS = 1000;
/** A claim holds a delivery this long: past the attempt's timeout, so only a dead node's claim runs out. */
const LEASE_MS = DELIVERY_TIMEOUT_MS * 6;
/** An endpoint whose last this many deliveries all failed is disabled (docs/webhooks.md). */
export const FAILURES_TO_DISABLE = 20;

export type DeliveryOutcome = 'delivered' | 'retry' | 'failed';

export interface DeliveryWorker {
  start(): void;
  /** Looks for due deliveries now (after this node committed some). */
  kick(): void;
  /** Stops claiming, interrupts the attempts in flight and gives their deliveries back. */
  stop(): Promise<void>;
}

export interface DeliveryWorkerDeps {
  db: Kysely<DB>;
  retryScheduleSeconds: readonly number[];
  allowPrivateTargets: boolean;
  /** The metric `service_webhook_deliveries_total{outcome}`. */
  onOutcome(outcome: DeliveryOutcome): void;
  /** Failures of the worker itself (storage); never given a secret. */
  warn(detail: Record<string, unknown>, message: string): void;
  /** The back-off's first length and longest (tests shorten them). */
  backOffMs?: { first: number; max: number };
}

/** What this node knows of an endpoint: attempts in flight, timeouts in a row, back-off, trust. */
interface EndpointState {
  inFlight: number;
  /** Of those, attempts past SLOW_ATTEMPT_MS without an answer. */
  waiting: number;
  /** Its last attempt got an answer in time (any status, or a refused connection). */
  answered: boolean;
  timeouts: number;
  pausedUntil: number;
  /** When its last attempt ended (ms). */
  settledAt: number;
  /** A postponement of its deliveries is being written (one at a time, however many claims see them). */
  postponing: boolean;
}

/** The body of a delivery (docs/webhooks.md): its event (`message.created`, `message.attention`, `.updated`, `.deleted`) and the message as it is when sent. */
export const deliveryBody = (d: ClaimedDelivery): string =>
  JSON.stringify({ type: d.event, timestamp: d.createdAt, data: { message: d.message } });

/** A `task.updated` delivery carries the task as it is when sent (docs/tasks.md); the others, deliveryBody. */
async function bodyOf(db: Kysely<DB>, d: ClaimedDelivery): Promise<string> {
  // `message.acked` carries its own data (docs/acknowledgements.md), written with the delivery.
  if (d.event === 'message.acked') return JSON.stringify({ type: d.event, timestamp: d.createdAt, data: d.payload });
  const taskId = d.event === 'task.updated' ? d.message.task?.id : undefined;
  if (taskId === undefined) return deliveryBody(d);
  const stored = await findTask(db, taskId);
  return JSON.stringify({ type: d.event, timestamp: d.createdAt, data: { task: stored?.task ?? null } });
}

export function createDeliveryWorker(deps: DeliveryWorkerDeps): DeliveryWorker {
  const { db, retryScheduleSeconds: schedule, allowPrivateTargets } = deps;
  // Each attempt's promise says whether shutdown interrupted it (then its delivery is given back).
  const inFlight = new Map<string, { abort: AbortController; done: Promise<boolean> }>();
  // Attempts holding a slot (not yet waiting), of them those of new or untrusted endpoints and of
  // untrusted ones; attempts per agent.
  const slots = { held: 0, unproven: 0, untrusted: 0 };
  const agents = new Map<string, number>();
  let current: Promise<void> = Promise.resolve();
  let timer: NodeJS.Timeout | undefined;
  let stopped = true;
  let claiming = false;
  let again = false;
  const backOff = deps.backOffMs ?? { first: BACK_OFF_MS, max: BACK_OFF_MAX_MS };
  // Only endpoints with attempts in flight, timeouts or a back-off have an entry.
  const endpoints = new Map<string, EndpointState>();
  const stateOf = (endpointId: string): EndpointState => {
    let state = endpoints.get(endpointId);
    if (!state) endpoints.set(endpointId, (state = { inFlight: 0, waiting: 0, answered: false, timeouts: 0, pausedUntil: 0, settledAt: 0, postponing: false }));
    return state;
  };
  // One that answered stays known (trusted) until pruned; others once nothing is pending on them.
  const forget = (endpointId: string, state: EndpointState): void => {
    if (state.inFlight === 0 && state.timeouts === 0 && state.pausedUntil <= Date.now() && !state.answered) endpoints.delete(endpointId);
  };
  const untrusted = (state: EndpointState | undefined): boolean => state !== undefined && (state.timeouts > 0 || state.waiting > 0);
  const trustOf = (state: EndpointState | undefined): Trust => (untrusted(state) ? 'untrusted' : state?.answered ? 'trusted' : 'new');
  const countAgent = (agentId: string, by: number): void => {
    const n = (agents.get(agentId) ?? 0) + by;
    if (n === 0) agents.delete(agentId);
    else agents.set(agentId, n);
  };

  const plan: ClaimPlan = {
    inFlight: (endpointId) => endpoints.get(endpointId)?.inFlight ?? 0,
    agentInFlight: (agentId) => agents.get(agentId) ?? 0,
    trust: (endpointId) => trustOf(endpoints.get(endpointId)),
    bound(endpointId) {
      const state = endpoints.get(endpointId);
      if (!state) return ENDPOINT_IN_FLIGHT_MAX;
      if (state.pausedUntil > Date.now()) return 0;
      return untrusted(state) ? 1 : ENDPOINT_IN_FLIGHT_MAX;
    },
    skipped(endpointIds) {
      // Deliveries recorded for an endpoint in back-off are due at once: moved to its end, so that
      // other nodes leave them too and the next claims do not read them again.
      for (const endpointId of endpointIds) {
        const state = endpoints.get(endpointId);
        if (state && state.pausedUntil > Date.now()) void postpone(endpointId, state);
      }
    },
  };

  const postpone = async (endpointId: string, state: EndpointState): Promise<void> => {
    if (state.postponing) return;
    state.postponing = true;
    try {
      await postponeEndpoint(db, endpointId, new Date(state.pausedUntil).toISOString());
    } catch (err) {
      deps.warn({ endpointId, err: err instanceof Error ? err.message : String(err) }, 'webhook endpoint back-off could not be recorded');
    } finally {
      state.postponing = false;
    }
  };

  /**
   * Forgets endpoints idle for longer than the longest back-off (since their last attempt and the
   * end of their back-off): deleted ones, or ones that got nothing; a later timeout starts a new streak.
   */
  const prune = (): void => {
    const now = Date.now();
    for (const [endpointId, state] of endpoints) {
      if (state.inFlight === 0 && !state.postponing && Math.max(state.pausedUntil, state.settledAt) + backOff.max < now) endpoints.delete(endpointId);
    }
  };

  /**
   * After an attempt: timeouts in a row put the endpoint in back-off as a whole (its pending
   * deliveries wait, other endpoints are unaffected); any answer, even a failing status, ends the
   * streak, as a refused connection does (neither holds a slot for long).
   */
  const settle = (endpointId: string, failure: string | null): void => {
    const state = stateOf(endpointId);
    state.inFlight -= 1;
    state.settledAt = Date.now();
    if (failure !== null && failure !== INTERRUPTED && isTimeout(failure)) {
      state.answered = false;
      state.timeouts += 1;
      if (state.timeouts >= TIMEOUTS_TO_BACK_OFF) {
        const length = Math.min(backOff.first * 2 ** (state.timeouts - TIMEOUTS_TO_BACK_OFF), backOff.max);
        state.pausedUntil = Math.max(state.pausedUntil, Date.now() + length);
        void postpone(endpointId, state);
      }
    } else if (failure !== INTERRUPTED) {
      state.answered = true;
      state.timeouts = 0;
      state.pausedUntil = 0;
    }
    forget(endpointId, state);
  };

  const outcomeOf = (d: ClaimedDelivery, failure: string | null, retryable: boolean): AttemptOutcome => {
    if (failure === null) return { status: 'delivered', at: nowIso() };
    // After the n-th failure wait the n-th value; 1 + the schedule's length attempts in all.
    const wait = schedule[d.attempt];
    if (!retryable || wait === undefined) return { status: 'failed', error: failure };
    return { status: 'pending', error: failure, nextAttemptAt: new Date(Date.now() + wait * 1000).toISOString() };
  };

  /**
   * One attempt, holding a slot (counted by its endpoint's trust when claimed) until it ends or
   * SLOW_ATTEMPT_MS pass without an answer: then it waits without a slot, and its endpoint is
   * untrusted until an attempt gets an answer.
   */
  const attempt = async (d: ClaimedDelivery, abort: AbortController, trust: Trust): Promise<boolean> => {
    let failure: string | null = INTERRUPTED;
    let waiting = false;
    const state = stateOf(d.endpointId);
    state.inFlight += 1;
    countAgent(d.agentId, 1);
    const hold = (by: number): void => {
      slots.held += by;
      if (trust !== 'trusted') slots.unproven += by;
      if (trust === 'untrusted') slots.untrusted += by;
    };
    const leave = (): void => hold(-1);
    hold(1);
    const slow = setTimeout(() => {
      waiting = true;
      state.waiting += 1;
      state.answered = false;
      leave();
      if (!stopped) void claim();
    }, SLOW_ATTEMPT_MS);
    try {
      return await attemptOnce(d, abort, (f) => {
        // Answered (or failed): recording the outcome holds the slot, it is not a wait.
        clearTimeout(slow);
        failure = f;
      });
    } finally {
      clearTimeout(slow);
      if (waiting) state.waiting -= 1;
      else leave();
      countAgent(d.agentId, -1);
      settle(d.endpointId, failure);
    }
  };

  const attemptOnce = async (d: ClaimedDelivery, abort: AbortController, seen: (failure: string | null) => void): Promise<boolean> => {
    let failure: string | null;
    let retryable = true;
    if (d.blocked !== null) {
      [failure, retryable] = [d.blocked, false];
    } else {
      const check = await checkTarget(d.url, { allowPrivate: allowPrivateTargets });
      if (!check.ok) {
        // A host that no longer resolves may come back; one that resolves to a refused address is refused.
        [failure, retryable] = [`target refused: ${check.problem}`, check.problem.includes('could not be resolved')];
      } else {
        failure = await postSigned(check.target, { id: d.id, secret: d.secret, body: await bodyOf(db, d) }, abort.signal);
      }
    }
    seen(abort.signal.aborted && failure !== null ? INTERRUPTED : failure);
    if (failure === INTERRUPTED || (abort.signal.aborted && failure !== null)) return true;
    const outcome = outcomeOf(d, failure, retryable);
    if (!(await recordAttempt(db, d.id, d.attempt, outcome))) return false;
    deps.onOutcome(outcome.status === 'pending' ? 'retry' : outcome.status);
    if (outcome.status === 'failed') await disableIfFailing(db, d.endpointId, FAILURES_TO_DISABLE, nowIso());
    return false;
  };

  const claim = (): Promise<void> => {
    if (stopped) return Promise.resolve();
    if (claiming) {
      again = true;
      return current;
    }
    claiming = true;
    current = claimAll();
    return current;
  };

  const claimAll = async (): Promise<void> => {
    try {
      do {
        again = false;
        const room = Math.min(DELIVERIES_IN_FLIGHT_MAX - slots.held, ATTEMPTS_MAX - inFlight.size);
        if (room <= 0) break;
        const free = { total: room, unproven: UNPROVEN_SLOTS_MAX - slots.unproven, untrusted: UNTRUSTED_SLOTS_MAX - slots.untrusted };
        const now = Date.now();
        const claimed = await claimDue(db, new Date(now).toISOString(), new Date(now + LEASE_MS).toISOString(), free, plan);
        if (stopped) {
          await releaseClaims(db, claimed.map((d) => d.id), nowIso());
          break;
        }
        for (const d of claimed) {
          const abort = new AbortController();
          const done = attempt(d, abort, trustOf(endpoints.get(d.endpointId)))
            .catch((err: unknown) => {
              deps.warn({ deliveryId: d.id, err: err instanceof Error ? err.message : String(err) }, 'webhook delivery could not be recorded');
              return false;
            })
            .finally(() => {
              inFlight.delete(d.id);
              // A slot freed: more may be due already.
              if (!stopped) void claim();
            });
          inFlight.set(d.id, { abort, done });
        }
        // Slots may be left (an endpoint had fewer due than its share): claim until nothing more comes.
        if (claimed.length > 0) again = true;
      } while (again && !stopped);
    } catch (err) {
      deps.warn({ err: err instanceof Error ? err.message : String(err) }, 'webhook deliveries could not be claimed');
    } finally {
      claiming = false;
    }
  };

  return {
    start() {
      if (!stopped) return;
      stopped = false;
      timer = setInterval(() => {
        prune();
        void claim();
      }, POLL_MS);
      timer.unref();
      void claim();
    },
    kick() {
      void claim();
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      clearInterval(timer);
      await current;
      const attempts = [...inFlight.entries()];
      for (const [, { abort }] of attempts) abort.abort();
      const interrupted = await Promise.all(attempts.map(async ([id, { done }]) => ((await done) ? [id] : [])));
      await releaseClaims(db, interrupted.flat(), nowIso()).catch((err: unknown) =>
        deps.warn({ err: err instanceof Error ? err.message : String(err) }, 'webhook deliveries could not be given back'));
    },
  };
}
