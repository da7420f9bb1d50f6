import { RateLimiterMemory, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { describe, expect, it, onTestFinished, vi } from 'vitest';
import { createSharedEventBudget, type Admission, type SharedEventBudget } from '../../src/limits/rate-limits.js';

/** The limiter as two nodes share it (in Redis there; one in-memory limiter here), its calls counted. */
function sharedLimiter(points: number): { limiter: RateLimiterAbstract; calls: () => number } {
  const limiter = new RateLimiterMemory({ points, duration: 1 });
  const consume = vi.spyOn(limiter, 'consume');
  return { limiter, calls: () => consume.mock.calls.length };
}

const admitted = (answers: readonly Admission[]): number => answers.filter((a) => a.admitted).length;

/** `count` events of one agent on `budget`, sent together (as one read of a socket hands them over). */
const burst = (budget: SharedEventBudget, agent: string, count: number): Promise<Admission[]> =>
  Promise.all(Array.from({ length: count }, () => budget.take(agent)));

describe('an agent event budget taken in shares', () => {
  it('admits exactly the budget on one node, asking the limiter once per share', async () => {
    // 21 points: shares of 2 (an eighth); the eleventh share crosses the limit by one and keeps the point within.
    const { limiter, calls } = sharedLimiter(21);
    const budget = createSharedEventBudget(limiter);
    const answers = await burst(budget, 'agent-a', 30);
    expect(admitted(answers)).toBe(21);
    expect(answers.slice(0, 21).every((a) => a.admitted)).toBe(true);
    expect(answers.slice(21).every((a) => !a.admitted && a.reason === 'limited')).toBe(true);
    expect(calls()).toBe(11);
    // Spent for this window: refused from memory, the limiter is not asked again.
    expect(budget.take('agent-a')).toEqual({ admitted: false, reason: 'limited' });
    expect(calls()).toBe(11);
    // Other agents have budgets of their own.
    expect(admitted(await burst(budget, 'agent-b', 5))).toBe(5);
  });

  it('never admits more than the budget over two nodes, and loses at most a share per node', async () => {
    const { limiter, calls } = sharedLimiter(40); // shares of 5
    const nodes = [createSharedEventBudget(limiter), createSharedEventBudget(limiter)];
    const answers: Admission[] = [];
    for (let i = 0; i < 100; i++) answers.push(await nodes[i % 2]!.take('agent'));
    expect(admitted(answers)).toBeLessThanOrEqual(40);
    expect(admitted(answers)).toBeGreaterThanOrEqual(40 - 2 * (5 - 1));
    expect(calls()).toBeLessThanOrEqual(10 + 2);
  });

  it('answers events waiting for a share in their order, and starts over when the window ends', async () => {
    // The window's end is the clock's: fake timers move it on, no real second passes.
    vi.useFakeTimers();
    onTestFinished(() => {
      vi.useRealTimers();
    });
    const { limiter } = sharedLimiter(16); // shares of 2
    const budget = createSharedEventBudget(limiter);
    const order: number[] = [];
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => Promise.resolve(budget.take('agent')).then((a) => {
      order.push(i);
      return a;
    })));
    expect(order).toEqual([...order].sort((a, b) => a - b));
    expect(answers.map((a) => a.admitted)).toEqual([...Array<boolean>(16).fill(true), ...Array<boolean>(4).fill(false)]);
    // Still the same window just before its end: refused.
    await vi.advanceTimersByTimeAsync(900);
    expect(admitted(await burst(budget, 'agent', 3))).toBe(0);
    await vi.advanceTimersByTimeAsync(200);
    expect(admitted(await burst(budget, 'agent', 3))).toBe(3);
  });

  it('while the store is away, asks it for every event and refuses UNAVAILABLE; a share held before is not used', async () => {
    let up = true;
    const { limiter, calls } = sharedLimiter(40);
    const budget = createSharedEventBudget(limiter, () => up);
    expect((await budget.take('agent')).admitted).toBe(true); // this node now holds 4 more
    const down = new Error('Redis is not ready');
    vi.spyOn(limiter, 'consume').mockRejectedValue(down);
    up = false;
    const answers = await burst(budget, 'agent', 3);
    expect(answers).toEqual([0, 1, 2].map(() => ({ admitted: false, reason: 'unavailable', error: down })));
    expect(calls()).toBe(1 + 3);
  });

  it('asks for every event when the budget is under 16 (shares of one)', async () => {
    const { limiter, calls } = sharedLimiter(12);
    const budget = createSharedEventBudget(limiter);
    expect(admitted(await burst(budget, 'agent', 15))).toBe(12);
    expect(calls()).toBe(12); // the twelfth left no point in the window: the rest are refused from memory
  });
});
