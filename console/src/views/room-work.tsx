import { useEffect, useState } from 'preact/hooks';
import type { Lease, Task } from '@agent-messaging/client';
import { describeError, formatTime, nameOf, type Session } from '../session.js';

/**
 * A room's shared work beside its conversation (docs/console.md): the unclaimed tasks of its queue,
 * each with **Claim** (docs/tasks.md, Queues). Shown only while the room has some: any group room
 * can be a queue, and most are not.
 */
export function QueueTasks({ session, roomId }: { session: Session; roomId: string }) {
  const { client } = session;
  const [open, setOpen] = useState<Task[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [claimed, setClaimed] = useState<Task | null>(null);

  useEffect(() => {
    let live = true;
    const unclaimed = (task: Task): boolean => task.queueId === roomId && task.assigneeId === null && task.state === 'submitted';
    const load = (): void => {
      client.tasks({ queue: roomId, state: ['submitted'], limit: 100 }).then(
        (page) => live && setOpen(page.tasks.filter(unclaimed).reverse()),
        () => undefined, // not a member any more, or offline: the list stays as it was
      );
    };
    load();
    // Created, claimed by anyone, or back in the queue: the list follows the room's task:updated.
    const offTask = client.on('taskUpdated', ({ task }) => {
      if (task.queueId !== roomId) return;
      setOpen((list) => {
        const rest = list.filter((t) => t.id !== task.id);
        return unclaimed(task) ? [...rest, task].sort((a, b) => a.createdAt.localeCompare(b.createdAt)) : rest;
      });
    });
    const offConnect = client.on('connect', load);
    return () => { live = false; offTask(); offConnect(); };
  }, [client, roomId]);

  const claim = (task: Task): void => {
    setError(null);
    client.claimTask(task.id).then(
      (mine) => { setClaimed(mine); setOpen((list) => list.filter((t) => t.id !== mine.id)); },
      (err) => setError(describeError(err)),
    );
  };

  if (open.length === 0 && error === null && claimed === null) return null;
  return (
    <aside class="queue" aria-labelledby="queue-heading">
      <h3 id="queue-heading">Queue</h3>
      {error !== null && <p role="alert" class="error">{error}</p>}
      {claimed !== null && <p role="status">Claimed: {claimed.title} (<a href="#/tasks">Tasks</a>)</p>}
      {open.length === 0 ? <p>No unclaimed tasks.</p> : (
        <ul>
          {open.map((task) => (
            <li key={task.id}>
              <span class="queue-title">{task.title}</span>{' '}
              <button type="button" class="small" aria-label={`Claim ${task.title}`} onClick={() => claim(task)}>Claim</button>
            </li>
          ))}
        </ul>
      )}
    </aside>
  );
}

/**
 * The room's live leases (docs/leases.md): resource, holder (display name) and expiry, oldest first,
 * kept current by `lease:updated` (granted, renewed, released, expired).
 */
export function RoomLeases({ session, roomId }: { session: Session; roomId: string }) {
  const { client } = session;
  const [leases, setLeases] = useState<Lease[] | null>(null);

  useEffect(() => {
    let live = true;
    const load = (): void => {
      client.leases(roomId).then((list) => live && setLeases(list), () => live && setLeases((l) => l ?? []));
    };
    load();
    const offLease = client.on('leaseUpdated', ({ lease, state }) => {
      if (lease.roomId !== roomId) return;
      setLeases((list) => {
        const rest = (list ?? []).filter((l) => l.id !== lease.id);
        return state === 'granted' || state === 'renewed' ? [...rest, lease].sort((a, b) => a.createdAt.localeCompare(b.createdAt)) : rest;
      });
    });
    const offConnect = client.on('connect', load);
    return () => { live = false; offLease(); offConnect(); };
  }, [client, roomId]);

  return (
    <aside class="leases" aria-labelledby="leases-heading">
      <h3 id="leases-heading">Leases</h3>
      {leases === null ? <p>Loading…</p> : leases.length === 0 ? <p>No leases.</p> : (
        <ul>
          {leases.map((lease) => (
            <li key={lease.id} aria-label={lease.resource}>
              <code class="lease-resource">{lease.resource}</code>
              <span class="lease-holder">{nameOf(session, lease.holderId)}</span>
              <span class="lease-expiry">until <time dateTime={lease.expiresAt}>{formatTime(lease.expiresAt)}</time></span>
            </li>
          ))}
        </ul>
      )}
    </aside>
  );
}
