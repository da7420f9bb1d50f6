/**
 * The waiting helpers of the suite. A test waits for a condition (waitUntil, or an event), for the
 * clock to pass an instant (untilPast: expiries), or, to show that something does NOT happen, for a
 * named window (waitToProveAbsence). `sleep` is for pacing a loop, never for letting work finish.
 */

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Polls `probe` every `everyMs` until it returns true; throws with `what` (and the probe's last
 * error, if it threw) after `timeoutMs`. A probe that throws counts as "not yet".
 */
export async function waitUntil(what: string, probe: () => Promise<boolean> | boolean, timeoutMs = 15_000, everyMs = 20): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      if (await probe()) return;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      const cause = lastError instanceof Error ? ` (last error: ${lastError.message})` : '';
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${cause}`);
    }
    await sleep(everyMs);
  }
}

/** Resolves once the clock is `marginMs` past `at` (a Date or epoch milliseconds): an expiry's only event is time. */
export async function untilPast(at: Date | number, marginMs = 50): Promise<void> {
  const target = (typeof at === 'number' ? at : at.getTime()) + marginMs;
  while (Date.now() < target) await sleep(target - Date.now());
}

/**
 * Gives something that must NOT happen (a duplicate, a second attempt, a wake-up, a delivery) `ms`
 * to happen before the test asserts it did not: an absence has no event to await, so this is the
 * one fixed wait of the suite. The caller says why `ms` is long enough; keep it as short as that.
 */
export const waitToProveAbsence = (ms: number): Promise<void> => sleep(ms);
