/** The waiting helpers of the suite: a pause, and polling for a condition that has no event to await. */

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
