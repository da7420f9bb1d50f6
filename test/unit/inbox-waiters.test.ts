import { describe, expect, it } from 'vitest';
import { InboxWaiters } from '../../src/core/inbox/inbox-waiters.js';

const ROOM_A = 'room-a';
const ROOM_B = 'room-b';

describe('InboxWaiters (the wake-up port a cluster bus subscriber calls)', () => {
  it('wake(roomId, senderId) wakes the waiters of that room except the sender, and forgets them', async () => {
    const waiters = new InboxWaiters();
    const alice = waiters.wait('alice', [ROOM_A, ROOM_B], 10_000);
    const bob = waiters.wait('bob', [ROOM_A], 10_000);
    const carol = waiters.wait('carol', [ROOM_B], 10_000);
    waiters.wake(ROOM_A, 'bob');
    expect(await alice.outcome).toBe('woken');
    expect(waiters.size).toBe(2);
    waiters.wake(ROOM_B, 'alice'); // alice is gone already; carol wakes
    expect(await carol.outcome).toBe('woken');
    expect(waiters.size).toBe(1); // bob: his own message woke nobody of his
    bob.cancel();
    expect(await bob.outcome).toBe('aborted');
    expect(waiters.size).toBe(0);
  });

  it('times out, follows an abort signal, and close answers every waiter and every later one', async () => {
    const waiters = new InboxWaiters();
    expect(await waiters.wait('a', [ROOM_A], 20).outcome).toBe('timeout');
    const controller = new AbortController();
    const aborted = waiters.wait('a', [ROOM_A], 10_000, controller.signal);
    controller.abort();
    expect(await aborted.outcome).toBe('aborted');
    const held = waiters.wait('a', [ROOM_A], 10_000);
    waiters.close();
    expect(await held.outcome).toBe('closed');
    expect(await waiters.wait('a', [ROOM_A], 10_000).outcome).toBe('closed');
    expect(waiters.size).toBe(0);
  });
});
