import { describe, expect, it } from 'vitest';
import { shareSlots, type ClaimPlan, type DueEndpoint } from '../../src/core/webhooks/webhooks.store.js';

// docs/webhooks.md, "Fairness": how a node shares its free slots among endpoints with due deliveries.
const planOf = (inFlight: Record<string, number>, bound: Record<string, number> = {}, opts: { agents?: Record<string, number>; untrusted?: string[]; fresh?: string[] } = {}): ClaimPlan => ({
  inFlight: (id) => inFlight[id] ?? 0,
  agentInFlight: (id) => opts.agents?.[id] ?? 0,
  bound: (id) => bound[id] ?? 4,
  trust: (id) => (opts.untrusted?.includes(id) ? 'untrusted' : opts.fresh?.includes(id) ? 'new' : 'trusted'),
});
const asObject = (shares: Map<string, number>) => Object.fromEntries(shares);
// Each endpoint its own agent unless given.
const dueOf = (entries: [string, number, string?][]): DueEndpoint[] => entries.map(([endpointId, count, agentId]) => ({ endpointId, count, agentId: agentId ?? endpointId }));
const all = (n: number) => ({ total: n, unproven: n, untrusted: n });

describe('sharing claim slots among endpoints', () => {
  it('one at a time to the endpoint with the fewest in flight, whatever the backlogs', () => {
    const due = dueOf([['backlog', 5000], ['fresh', 1], ['other', 3]]);
    expect(asObject(shareSlots(due, all(3), planOf({})))).toEqual({ backlog: 1, fresh: 1, other: 1 });
    // The endpoint whose attempts hang holds 3 slots: the others come first.
    expect(asObject(shareSlots(due, all(2), planOf({ backlog: 3 }, {}, { agents: { backlog: 3 } })))).toEqual({ fresh: 1, other: 1 });
  });

  it('never past an endpoint\'s bound or its due count; a bound of 0 (back-off) gets nothing', () => {
    const due = dueOf([['a', 100], ['b', 2], ['paused', 50]]);
    expect(asObject(shareSlots(due, all(64), planOf({ a: 1 }, { a: 4, b: 4, paused: 0 })))).toEqual({ a: 3, b: 2 });
    // After a timeout the bound is 1: a probe, and nothing while it is in flight.
    expect(asObject(shareSlots(due, all(64), planOf({ a: 1 }, { a: 1, b: 4, paused: 0 })))).toEqual({ b: 2 });
  });

  it('ties go to the endpoint due longest (the order of `due`)', () => {
    const due = dueOf([['first', 10], ['second', 10]]);
    expect(asObject(shareSlots(due, all(1), planOf({})))).toEqual({ first: 1 });
    expect(asObject(shareSlots(due, all(3), planOf({})))).toEqual({ first: 2, second: 1 });
  });

  it('first to the agent with the fewest attempts in flight, however many endpoints the others have', () => {
    // Agent "many" has ten endpoints due before agent "one"'s only endpoint.
    const due = dueOf([...Array.from({ length: 10 }, (_, i): [string, number, string] => [`m${i}`, 10, 'many']), ['lone', 10, 'one']]);
    expect(shareSlots(due, all(2), planOf({})).get('lone')).toBe(1);
    // "many" has 4 attempts in flight: "one" gets its endpoint's whole bound (4) first.
    expect(shareSlots(due, all(4), planOf({}, {}, { agents: { many: 4 } })).get('lone')).toBe(4);
  });

  it('untrusted endpoints get at most their share of the free slots, the others the rest', () => {
    const untrusted = Array.from({ length: 20 }, (_, i) => `dead${i}`);
    const due = dueOf([...untrusted.map((id): [string, number] => [id, 5]), ['healthy', 3]]);
    const shares = shareSlots(due, { total: 10, unproven: 10, untrusted: 4 }, planOf({}, Object.fromEntries(untrusted.map((id) => [id, 1])), { untrusted }));
    expect(shares.get('healthy')).toBe(3);
    expect([...shares.values()].reduce((a, b) => a + b, 0)).toBe(7);
    // No untrusted slot free: only the trusted endpoint gets one.
    expect(asObject(shareSlots(due, { total: 10, unproven: 10, untrusted: 0 }, planOf({}, {}, { untrusted })))).toEqual({ healthy: 3 });
  });

  it('new and untrusted endpoints together get at most their share: the rest is kept for those that answered', () => {
    const fresh = Array.from({ length: 20 }, (_, i) => `new${i}`);
    const due = dueOf([...fresh.map((id): [string, number] => [id, 5]), ['late', 5], ['healthy', 3]]);
    const shares = shareSlots(due, { total: 10, unproven: 2, untrusted: 2 }, planOf({}, {}, { fresh: [...fresh, 'late'], untrusted: ['late'] }));
    expect(asObject(shares)).toEqual({ new0: 1, new1: 1, healthy: 3 });
  });
});
