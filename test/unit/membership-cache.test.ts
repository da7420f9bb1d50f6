import { afterEach, describe, expect, it, vi } from 'vitest';
import { MembershipCache } from '../../src/core/rooms/membership-cache.js';

describe('MembershipCache', () => {
  it('remembers positive answers and forgets removed memberships', () => {
    const cache = new MembershipCache();
    expect(cache.has('r1', 'a1')).toBe(false);
    cache.remember(cache.begin(), 'r1', 'a1');
    expect(cache.has('r1', 'a1')).toBe(true);
    expect(cache.has('r1', 'a2')).toBe(false);
    expect(cache.has('r2', 'a1')).toBe(false);
    cache.forget('r1', 'a1');
    expect(cache.has('r1', 'a1')).toBe(false);
  });

  it('does not store an answer from a lookup that began before a removal', () => {
    const cache = new MembershipCache();
    const since = cache.begin(); // the database said "member" ...
    cache.forget('r1', 'a1'); // ... then the membership was removed, before the answer came back
    cache.remember(since, 'r1', 'a1');
    expect(cache.has('r1', 'a1')).toBe(false);
    // A lookup that begins afterwards is stored.
    cache.remember(cache.begin(), 'r1', 'a2');
    expect(cache.has('r1', 'a2')).toBe(true);
  });

  it('stays bounded: past its size it starts over', () => {
    const cache = new MembershipCache({ maxEntries: 3 });
    for (const agent of ['a1', 'a2', 'a3']) cache.remember(cache.begin(), 'r1', agent);
    expect(['a1', 'a2', 'a3'].every((a) => cache.has('r1', a))).toBe(true);
    cache.remember(cache.begin(), 'r2', 'a4');
    expect(cache.has('r2', 'a4')).toBe(true);
    expect(cache.has('r1', 'a1')).toBe(false);
  });

  describe('with several nodes', () => {
    afterEach(() => {
      vi.useRealTimers();
    });

    it('lets entries expire, so a lost announcement is not trusted for long', () => {
      vi.useFakeTimers({ toFake: ['Date'] });
      const cache = new MembershipCache({ ttlMs: 5000 });
      cache.remember(cache.begin(), 'r1', 'a1');
      vi.advanceTimersByTime(4999);
      expect(cache.has('r1', 'a1')).toBe(true);
      vi.advanceTimersByTime(1);
      expect(cache.has('r1', 'a1')).toBe(false);
    });

    it('clears everything, and no lookup begun before the clear stores its answer', () => {
      const cache = new MembershipCache();
      cache.remember(cache.begin(), 'r1', 'a1');
      const since = cache.begin();
      cache.clear();
      expect(cache.has('r1', 'a1')).toBe(false);
      cache.remember(since, 'r1', 'a2');
      expect(cache.has('r1', 'a2')).toBe(false);
    });
  });
});
