import { isTransient } from './errors.js';
import type { Session } from './types.js';

/** Renew this long before `exp` when the lifetime allows it (the console needs at least 60 s). */
const RENEW_BEFORE_MS = 60_000;
/** A shorter lifetime is renewed at this fraction of it. */
const RENEW_AT_FRACTION = 0.8;
/** After a failed renewal, try again this soon (the current JWT may still be valid)... */
const RETRY_MS = 2_000;
/** ...or this late when the API token itself was refused (revoked, agent disabled): it may come back. */
const REFUSED_RETRY_MS = 30_000;

/** When to renew a JWT valid for `remainingMs` from now. */
export function renewalDelay(remainingMs: number): number {
  if (remainingMs > 2 * RENEW_BEFORE_MS) return remainingMs - RENEW_BEFORE_MS;
  return Math.max(0, remainingMs * RENEW_AT_FRACTION);
}

/**
 * Holds the session JWT of an API token: exchanged on first use, renewed on a timer before `exp`
 * (and on demand once it is due or was refused), one exchange at a time.
 */
export class SessionKeeper {
  private current: { token: string; renewAt: number } | null = null;
  private exchanging: Promise<string> | null = null;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private stopped = false;

  constructor(
    private readonly exchange: () => Promise<Session>,
    private readonly onRenewalError: (err: unknown) => void,
  ) {}

  /** A JWT that is not due for renewal, exchanging the API token when needed. */
  token(): Promise<string> {
    if (this.current && Date.now() < this.current.renewAt) return Promise.resolve(this.current.token);
    return this.renew();
  }

  /** The JWT was refused (expired, or the server's secret changed): the next token() exchanges. */
  invalidate(refused?: string): void {
    if (refused === undefined || this.current?.token === refused) this.current = null;
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private renew(): Promise<string> {
    this.exchanging ??= this.exchange().then(
      (session) => {
        this.exchanging = null;
        const remaining = Date.parse(session.expiresAt) - Date.now();
        const delay = renewalDelay(remaining);
        this.current = { token: session.token, renewAt: Date.now() + delay };
        this.schedule(delay);
        return session.token;
      },
      (err: unknown) => {
        this.exchanging = null;
        throw err;
      },
    );
    return this.exchanging;
  }

  private schedule(delayMs: number): void {
    clearTimeout(this.timer);
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.renew().catch((err: unknown) => {
        this.onRenewalError(err);
        this.schedule(isTransient(err) ? RETRY_MS : REFUSED_RETRY_MS);
      });
    }, delayMs);
  }
}
