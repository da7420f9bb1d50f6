import { describe, expect, it } from 'vitest';
import { createWaitSlots } from '../../src/limits/wait-slots.js';
import { longPoll, Waiters } from '../../src/core/waiters/waiters.js';
import { TaskWaiters, agentKey, taskKey } from '../../src/core/tasks/task-waiters.js';

describe('Waiters (the one registry of held requests)', () => {
  it('wakes the waiters under a key whose predicate accepts the change, each once, and forgets them', async () => {
    const waiters = new Waiters<number>();
    const even = waiters.wait(['a', 'b'], (n) => n % 2 === 0, 10_000);
    const odd = waiters.wait(['a'], (n) => n % 2 === 1, 10_000);
    waiters.wakeKeys(['a', 'b'], 2);
    expect(await even.outcome).toBe('woken');
    expect(waiters.size).toBe(1);
    waiters.wakeKeys(['b'], 3); // odd is not filed under b
    expect(waiters.size).toBe(1);
    waiters.wakeKeys(['a'], 3);
    expect(await odd.outcome).toBe('woken');
    expect(waiters.size).toBe(0);
  });

  it('TaskWaiters wakes by the task and by either of its agents', async () => {
    const waiters = new TaskWaiters();
    const byTask = waiters.wait([taskKey('t1')], () => true, 10_000);
    const byAgent = waiters.wait([agentKey('bob')], (c) => c.state === 'completed', 10_000);
    waiters.wake({ id: 't1', requesterId: 'alice', assigneeId: 'bob', state: 'working' });
    expect(await byTask.outcome).toBe('woken');
    expect(waiters.size).toBe(1); // bob's waiter wants a completed task
    waiters.wake({ id: 't2', requesterId: 'bob', assigneeId: 'carol', state: 'completed' });
    expect(await byAgent.outcome).toBe('woken');
    expect(waiters.size).toBe(0);
  });
});

describe('longPoll (the one held-request loop)', () => {
  it('registers before it reads, so a change between the read and the wait still wakes it, and frees its slot', async () => {
    const waiters = new Waiters<string>();
    const slots = createWaitSlots(2);
    let reads = 0;
    const end = await longPoll({
      agentId: 'a', deadline: Date.now() + 10_000, slots, registry: waiters,
      register: (left) => waiters.wait(['k'], () => true, left),
      read: async () => {
        reads += 1;
        if (reads === 1) waiters.wakeKeys(['k'], 'committed while reading');
        return reads;
      },
      found: (n) => n >= 2,
    });
    expect(end).toEqual({ kind: 'read', read: 2 });
    expect(slots.heldBy('a')).toBe(0);
    expect(waiters.size).toBe(0);
  });

  it('ends with the outcome of a wait that was not woken', async () => {
    const waiters = new Waiters<string>();
    const slots = createWaitSlots(1);
    const end = await longPoll({
      agentId: 'a', deadline: Date.now() + 20, slots, registry: waiters,
      register: (left) => waiters.wait(['k'], () => true, left),
      read: async () => 0,
      found: () => false,
    });
    expect(end).toEqual({ kind: 'ended', outcome: 'timeout' });
    expect(slots.heldBy('a')).toBe(0);
  });

  it('beyond the slots answers what there is, and is refused only when it would have to wait', async () => {
    const waiters = new Waiters<string>();
    const slots = createWaitSlots(1);
    const release = slots.acquire('a');
    const poll = (found: boolean) => longPoll({
      agentId: 'a', deadline: Date.now() + 10_000, slots, registry: waiters,
      register: (left) => waiters.wait(['k'], () => true, left),
      read: async () => 'page',
      found: () => found,
    });
    expect(await poll(true)).toEqual({ kind: 'read', read: 'page' });
    await expect(poll(false)).rejects.toMatchObject({ code: 'RATE_LIMITED' });
    expect(waiters.size).toBe(0);
    release();
  });

  it('does not wait once the registry is closed: it answers the read', async () => {
    const waiters = new Waiters<string>();
    waiters.close();
    const end = await longPoll({
      agentId: 'a', deadline: Date.now() + 10_000, slots: createWaitSlots(1), registry: waiters,
      register: (left) => waiters.wait(['k'], () => true, left),
      read: async () => 'nothing',
      found: () => false,
    });
    expect(end).toEqual({ kind: 'read', read: 'nothing' });
  });
});
