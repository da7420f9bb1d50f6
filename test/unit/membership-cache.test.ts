import { describe, expect, it } from 'vitest';
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
    const cache = new MembershipCache(3);
    for (const agent of ['a1', 'a2', 'a3']) cache.remember(cache.begin(), 'r1', agent);
    expect(['a1', 'a2', 'a3'].every((a) => cache.has('r1', a))).toBe(true);
    cache.remember(cache.begin(), 'r2', 'a4');
    expect(cache.has('r2', 'a4')).toBe(true);
    expect(cache.has('r1', 'a1')).toBe(false);
  });
});
