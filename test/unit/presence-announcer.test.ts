import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createPresenceAnnouncer, PRESENCE_WINDOW_MS } from '../../src/realtime/presence/room-subscriptions.js';
import type { AgentsNamespace } from '../../src/realtime/protocol.js';

/** What the announcer emitted, as `room agent status`, against a stand-in for the namespace. */
function recordingNamespace() {
  const sent: string[] = [];
  const nsp = {
    to: (channel: string) => ({
      emit: (event: string, payload: { agentId: string; status: string }) => void sent.push(`${channel} ${event} ${payload.agentId} ${payload.status}`),
    }),
  };
  // Only `to(channel).emit` is used by the announcer.
  return { sent, nsp: nsp as unknown as AgentsNamespace };
}

describe('presence:update coalesced per room (realtime/presence/room-subscriptions.ts)', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('sends a lone update at once, and a burst\'s later updates together, in order, at the end of the window', () => {
    const { sent, nsp } = recordingNamespace();
    const announcer = createPresenceAnnouncer(nsp);
    announcer.announce('r1', 'a', 'online');
    expect(sent).toEqual(['room:r1 presence:update a online']);
    announcer.announce('r1', 'b', 'online');
    announcer.announce('r1', 'a', 'offline');
    announcer.announce('r2', 'c', 'online'); // another room has its own window
    expect(sent).toEqual(['room:r1 presence:update a online', 'room:r2 presence:update c online']);
    vi.advanceTimersByTime(PRESENCE_WINDOW_MS - 1);
    expect(sent).toHaveLength(2);
    vi.advanceTimersByTime(1);
    expect(sent.slice(2)).toEqual(['room:r1 presence:update b online', 'room:r1 presence:update a offline']);

    // The burst went on, so the next window is open: an update waits for its end.
    announcer.announce('r1', 'd', 'online');
    expect(sent).toHaveLength(4);
    vi.advanceTimersByTime(PRESENCE_WINDOW_MS);
    expect(sent.slice(4)).toEqual(['room:r1 presence:update d online']);
    // A quiet window closes the room's windows: the next update goes out at once again.
    vi.advanceTimersByTime(PRESENCE_WINDOW_MS);
    announcer.announce('r1', 'e', 'online');
    expect(sent.slice(5)).toEqual(['room:r1 presence:update e online']);
  });

  it('flush sends what waits for a room now (before the room\'s other events), and close sends everything', () => {
    const { sent, nsp } = recordingNamespace();
    const announcer = createPresenceAnnouncer(nsp);
    announcer.announce('r1', 'a', 'online');
    announcer.announce('r1', 'b', 'online');
    announcer.announce('r2', 'c', 'online');
    announcer.announce('r2', 'd', 'online');
    announcer.flush('r1');
    expect(sent).toEqual(['room:r1 presence:update a online', 'room:r2 presence:update c online', 'room:r1 presence:update b online']);
    announcer.flush('r1'); // nothing left
    expect(sent).toHaveLength(3);
    announcer.close();
    expect(sent.slice(3)).toEqual(['room:r2 presence:update d online']);
    vi.advanceTimersByTime(10 * PRESENCE_WINDOW_MS);
    expect(sent).toHaveLength(4); // the windows stopped with close
  });
});
