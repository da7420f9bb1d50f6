import type { Kysely } from 'kysely';
import type { Dialect } from '../../store/database-handle.js';
import type { DB } from '../../store/schema.js';
import { nowIso } from '../../store/values.js';
import { checkTarget } from './ssrf-guard.js';
import { DELIVERY_TIMEOUT_MS, INTERRUPTED, postSigned } from './webhook-request.js';
import { claimDue, disableIfFailing, recordAttempt, releaseClaims, type AttemptOutcome, type ClaimedDelivery } from './webhooks.store.js';

/** Attempts one node makes at once: a bound on sockets and memory whatever the backlog. */
export const DELIVERIES_IN_FLIGHT_MAX = 16;
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
  dialect: Dialect;
  retryScheduleSeconds: readonly number[];
  allowPrivateTargets: boolean;
  /** The metric `service_webhook_deliveries_total{outcome}`. */
  onOutcome(outcome: DeliveryOutcome): void;
  /** Failures of the worker itself (storage); never given a secret. */
  warn(detail: Record<string, unknown>, message: string): void;
}

/** The body of a `message.created` delivery (docs/webhooks.md): the same on every attempt. */
export const deliveryBody = (d: ClaimedDelivery): string =>
  JSON.stringify({ type: 'message.created', timestamp: d.createdAt, data: { message: d.message } });

export function createDeliveryWorker(deps: DeliveryWorkerDeps): DeliveryWorker {
  const { db, dialect, retryScheduleSeconds: schedule, allowPrivateTargets } = deps;
  // Each attempt's promise says whether shutdown interrupted it (then its delivery is given back).
  const inFlight = new Map<string, { abort: AbortController; done: Promise<boolean> }>();
  let current: Promise<void> = Promise.resolve();
  let timer: NodeJS.Timeout | undefined;
  let stopped = true;
  let claiming = false;
  let again = false;

  const outcomeOf = (d: ClaimedDelivery, failure: string | null, retryable: boolean): AttemptOutcome => {
    if (failure === null) return { status: 'delivered', at: nowIso() };
    // After the n-th failure wait the n-th value; 1 + the schedule's length attempts in all.
    const wait = schedule[d.attempt];
    if (!retryable || wait === undefined) return { status: 'failed', error: failure };
    return { status: 'pending', error: failure, nextAttemptAt: new Date(Date.now() + wait * 1000).toISOString() };
  };

  const attempt = async (d: ClaimedDelivery, abort: AbortController): Promise<boolean> => {
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
        failure = await postSigned(check.target, { id: d.id, secret: d.secret, body: deliveryBody(d) }, abort.signal);
      }
    }
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
        const room = DELIVERIES_IN_FLIGHT_MAX - inFlight.size;
        if (room <= 0) break;
        const now = Date.now();
        const claimed = await claimDue(db, dialect, new Date(now).toISOString(), new Date(now + LEASE_MS).toISOString(), room);
        if (stopped) {
          await releaseClaims(db, claimed.map((d) => d.id), nowIso());
          break;
        }
        for (const d of claimed) {
          const abort = new AbortController();
          const done = attempt(d, abort)
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
        if (claimed.length === room) again = true;
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
      timer = setInterval(() => void claim(), POLL_MS);
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
