import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createActivityService, type ActivityService } from '../../src/core/activity/activity.service.js';
import { createAuthz } from '../../src/core/authz/authz.js';
import type { DomainEvent } from '../../src/core/events.js';
import { forbidden } from '../../src/errors.js';

const ROOM = '00000000-0000-4000-8000-000000000001';
const AGENT = '00000000-0000-4000-8000-0000000000a1';
const OUTSIDER = '00000000-0000-4000-8000-0000000000b2';
const me = { agentId: AGENT, role: 'agent' as const };

describe('activity service', () => {
  let sent: DomainEvent[];
  let activity: ActivityService;
  const updates = () => sent.flatMap((e) => (e.type === 'activity.changed' ? [e.update] : []));

  beforeEach(() => {
    vi.useFakeTimers({ now: new Date('2026-11-26T12:00:00.000Z') });
    sent = [];
    activity = createActivityService({
      authz: createAuthz('open'),
      rooms: {
        assertMember: async (_roomId, agentId) => {
          if (agentId === OUTSIDER) throw forbidden('Not a member of this room');
          return 'group';
        },
      },
      events: { publish: (e) => void sent.push(e) },
    });
  });
  afterEach(() => {
    activity.close();
    vi.useRealTimers();
  });

  it('sends the first update at once with its expiry, and refuses a non-member and bad input', async () => {
    await activity.set(me, ROOM, { state: 'working', text: 'reading the logs' });
    expect(updates()).toEqual([{ roomId: ROOM, agentId: AGENT, state: 'working', text: 'reading the logs', expiresAt: '2026-11-26T12:02:00.000Z' }]);
    expect(activity.of(ROOM, AGENT)).toEqual({ state: 'working', text: 'reading the logs', expiresAt: '2026-11-26T12:02:00.000Z' });
    await expect(activity.set({ agentId: OUTSIDER, role: 'agent' }, ROOM, { state: 'typing' })).rejects.toMatchObject({ code: 'FORBIDDEN' });
    await expect(activity.set(me, ROOM, { state: 'sleeping' })).rejects.toMatchObject({ code: 'VALIDATION_ERROR' });
    await expect(activity.set(me, ROOM, { state: 'typing', text: 'x'.repeat(81) })).rejects.toMatchObject({ code: 'VALIDATION_ERROR' });
  });

  it('holds updates within a second of the last one sent and sends only the latest when it ends', async () => {
    await activity.set(me, ROOM, { state: 'typing' });
    for (let i = 0; i < 50; i++) {
      vi.advanceTimersByTime(10);
      await activity.set(me, ROOM, { state: 'working', text: `step ${i}` });
    }
    expect(updates()).toHaveLength(1);
    vi.advanceTimersByTime(499);
    expect(updates()).toHaveLength(1);
    vi.advanceTimersByTime(1);
    expect(updates().map((u) => u.text)).toEqual(['', 'step 49']);
    // Nothing more is held: the next second passes quietly, then a new state goes out at once.
    vi.advanceTimersByTime(1000);
    expect(updates()).toHaveLength(2);
    await activity.set(me, ROOM, { state: 'idle', text: 'ignored' });
    expect(updates()[2]).toEqual({ roomId: ROOM, agentId: AGENT, state: 'idle', text: '', expiresAt: null });
    expect(activity.of(ROOM, AGENT)).toBeNull();
  });

  it('lets typing expire after 8 s without sending anything', async () => {
    await activity.set(me, ROOM, { state: 'typing' });
    vi.advanceTimersByTime(7_999);
    expect(activity.of(ROOM, AGENT)?.state).toBe('typing');
    vi.advanceTimersByTime(1);
    expect(activity.of(ROOM, AGENT)).toBeNull();
    vi.advanceTimersByTime(60_000);
    expect(updates()).toHaveLength(1);
  });

  it('sends idle when the agent sends a message in the room or its last socket goes, only where it showed something', async () => {
    const message = { roomId: ROOM, senderId: AGENT } as Extract<DomainEvent, { type: 'message.created' }>['message'];
    activity.listener.publish({ type: 'message.created', message });
    expect(updates()).toHaveLength(0);
    await activity.set(me, ROOM, { state: 'typing' });
    vi.advanceTimersByTime(1000);
    activity.listener.publish({ type: 'message.created', message });
    expect(updates().map((u) => u.state)).toEqual(['typing', 'idle']);
    vi.advanceTimersByTime(1000);
    await activity.set(me, ROOM, { state: 'working' });
    vi.advanceTimersByTime(1000);
    activity.gone(AGENT, [ROOM]);
    expect(updates().map((u) => u.state)).toEqual(['typing', 'idle', 'working', 'idle']);
  });

  it('remembers updates other nodes sent', () => {
    activity.record({ roomId: ROOM, agentId: OUTSIDER, state: 'working', text: 'elsewhere', expiresAt: '2026-11-26T12:02:00.000Z' });
    expect(activity.of(ROOM, OUTSIDER)).toEqual({ state: 'working', text: 'elsewhere', expiresAt: '2026-11-26T12:02:00.000Z' });
    expect(sent).toHaveLength(0);
  });
});
