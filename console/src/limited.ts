/**
 * A queue that runs at most `max` reads at once: views that read one thing per item (a task's
 * request, an audit subject's name) do not spend the agent's request rate in one burst.
 */
export function limiter(max: number): <T>(run: () => Promise<T>) => Promise<T> {
  let running = 0;
  const waiting: (() => void)[] = [];
  return async (run) => {
    if (running >= max) await new Promise<void>((resolve) => waiting.push(resolve));
    running += 1;
    try {
      return await run();
    } finally {
      running -= 1;
      waiting.shift()?.();
    }
  };
}
