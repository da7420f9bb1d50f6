import { describe, expect, it } from 'vitest';
import { shareSlots, type ClaimPlan } from '../../src/core/webhooks/webhooks.store.js';

// docs/webhooks.md, "Fairness": how a node shares its free slots among endpoints with due deliveries.
const planOf = (inFlight: Record<string, number>, bound: Record<string, number> = {}): ClaimPlan => ({
  inFlight: (id) => inFlight[id] ?? 0,
  bound: (id) => bound[id] ?? 4,
});
const asObject = (shares: Map<string, number>) => Object.fromEntries(shares);

describe('sharing claim slots among endpoints', () => {
  it('one at a time to the endpoint with the fewest in flight, whatever the backlogs', () => {
    const due = [{ endpointId: 'backlog', count: 5000 }, { endpointId: 'fresh', count: 1 }, { endpointId: 'other', count: 3 }];
    expect(asObject(shareSlots(due, 3, planOf({})))).toEqual({ backlog: 1, fresh: 1, other: 1 });
    // The endpoint whose attempts hang holds 3 slots: the others come first.
    expect(asObject(shareSlots(due, 2, planOf({ backlog: 3 })))).toEqual({ fresh: 1, other: 1 });
  });

  it('never past an endpoint\'s bound or its due count; a bound of 0 (back-off) gets nothing', () => {
    const due = [{ endpointId: 'a', count: 100 }, { endpointId: 'b', count: 2 }, { endpointId: 'paused', count: 50 }];
    expect(asObject(shareSlots(due, 64, planOf({ a: 1 }, { a: 4, b: 4, paused: 0 })))).toEqual({ a: 3, b: 2 });
    // After a timeout the bound is 1: a probe, and nothing while it is in flight.
    expect(asObject(shareSlots(due, 64, planOf({ a: 1 }, { a: 1, b: 4, paused: 0 })))).toEqual({ b: 2 });
  });

  it('ties go to the endpoint due longest (the order of `due`)', () => {
    const due = [{ endpointId: 'first', count: 10 }, { endpointId: 'second', count: 10 }];
    expect(asObject(shareSlots(due, 1, planOf({})))).toEqual({ first: 1 });
    expect(asObject(shareSlots(due, 3, planOf({})))).toEqual({ first: 2, second: 1 });
  });
});
