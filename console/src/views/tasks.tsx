import { useEffect, useState } from 'preact/hooks';
import type { Task, TaskState } from '@agent-messaging/client';
import { describeError, nameOf, type Session } from '../session.js';

const TERMINAL: TaskState[] = ['completed', 'failed', 'canceled', 'rejected'];

/** The moves the assignee may make from each state (docs/tasks.md), as buttons. */
const ASSIGNEE_MOVES: Partial<Record<TaskState, { state: TaskState; label: string }[]>> = {
  submitted: [{ state: 'working', label: 'Start' }, { state: 'completed', label: 'Complete' }, { state: 'failed', label: 'Fail' }, { state: 'rejected', label: 'Reject' }],
  working: [{ state: 'input-required', label: 'Ask for input' }, { state: 'completed', label: 'Complete' }, { state: 'failed', label: 'Fail' }],
  'input-required': [{ state: 'working', label: 'Resume' }, { state: 'completed', label: 'Complete' }, { state: 'failed', label: 'Fail' }],
};

/** Newest change first, as the service lists them; one entry per task. */
function upsert(list: Task[], task: Task): Task[] {
  return [task, ...list.filter((t) => t.id !== task.id)].sort((a, b) => b.updatedAt.localeCompare(a.updatedAt));
}

/** A loaded list with the tasks heard live meanwhile: of two copies of a task, the later one. */
const withLive = (loaded: Task[], live: Task[] | null): Task[] =>
  (live ?? []).reduce((list, task) => (list.some((t) => t.id === task.id && t.updatedAt >= task.updatedAt) ? list : upsert(list, task)), loaded);

/**
 * Tasks (docs/console.md): those assigned to the signed-in agent and those it requested, each with
 * its title and state, kept live by `task:updated`, with a button for every move open to its side;
 * an approval assigned to it gets Approve and Deny, with a Comment that becomes the move's message.
 */
export function TasksView({ session }: { session: Session }) {
  const [assigned, setAssigned] = useState<Task[] | null>(null);
  const [requested, setRequested] = useState<Task[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const me = session.me.id;

  useEffect(() => {
    let current = true;
    Promise.all([session.client.tasks({ as: 'assignee', limit: 100 }), session.client.tasks({ as: 'requester', limit: 100 })]).then(
      // A task heard live while the lists loaded is kept.
      ([mine, theirs]) => {
        if (!current) return;
        setAssigned((live) => withLive(mine.tasks, live));
        setRequested((live) => withLive(theirs.tasks, live));
      },
      (err) => { if (current) setError(describeError(err)); },
    );
    const off = session.client.on('taskUpdated', ({ task }) => {
      if (task.assigneeId === me) setAssigned((list) => upsert(list ?? [], task));
      if (task.requesterId === me) setRequested((list) => upsert(list ?? [], task));
    });
    return () => { current = false; off(); };
  }, [session, me]);

  // A move's answer is the task as it is now: shown at once (the live event may come after).
  const moved = (task: Task): void => {
    setError(null);
    if (task.assigneeId === me) setAssigned((list) => upsert(list ?? [], task));
    if (task.requesterId === me) setRequested((list) => upsert(list ?? [], task));
  };
  const act = (run: () => Promise<Task>): void => {
    run().then(moved, (err) => setError(describeError(err)));
  };

  return (
    <div class="tasks">
      <h1>Tasks</h1>
      {error !== null && <p role="alert" class="error">{error}</p>}
      <section aria-labelledby="tasks-assigned">
        <h2 id="tasks-assigned">Assigned to me</h2>
        <TaskList tasks={assigned} session={session} side="assignee" act={act} />
      </section>
      <section aria-labelledby="tasks-requested">
        <h2 id="tasks-requested">Requested by me</h2>
        <TaskList tasks={requested} session={session} side="requester" act={act} />
      </section>
    </div>
  );
}

function TaskList({ tasks, session, side, act }: { tasks: Task[] | null; session: Session; side: 'assignee' | 'requester'; act: (run: () => Promise<Task>) => void }) {
  if (tasks === null) return <p>Loading…</p>;
  if (tasks.length === 0) return <p>No tasks.</p>;
  return (
    <ul class="task-list">
      {tasks.map((task) => <TaskItem key={task.id} task={task} session={session} side={side} act={act} />)}
    </ul>
  );
}

function TaskItem({ task, session, side, act }: { task: Task; session: Session; side: 'assignee' | 'requester'; act: (run: () => Promise<Task>) => void }) {
  const [text, setText] = useState('');
  const client = session.client;
  const open = !TERMINAL.includes(task.state);
  const other = side === 'assignee' ? `from ${nameOf(session, task.requesterId)}` : `to ${nameOf(session, task.assigneeId)}`;
  const message = text.trim() === '' ? {} : { message: { body: text.trim() } };
  const titleId = `task-${task.id}`;

  let controls = null;
  if (open && side === 'assignee' && task.kind === 'approval') {
    controls = (
      <div class="task-moves">
        <label for={`comment-${task.id}`}>Comment</label>
        <input id={`comment-${task.id}`} type="text" value={text} maxLength={2000} onInput={(e) => setText((e.target as HTMLInputElement).value)} />
        <button type="button" onClick={() => act(() => client.decide(task.id, 'approved', text.trim() === '' ? undefined : text.trim()))}>Approve</button>
        <button type="button" class="secondary" onClick={() => act(() => client.decide(task.id, 'denied', text.trim() === '' ? undefined : text.trim()))}>Deny</button>
      </div>
    );
  } else if (open && side === 'assignee') {
    controls = (
      <div class="task-moves">
        <label for={`note-${task.id}`}>Note</label>
        <input id={`note-${task.id}`} type="text" value={text} maxLength={2000} onInput={(e) => setText((e.target as HTMLInputElement).value)} />
        {(ASSIGNEE_MOVES[task.state] ?? []).map((move) => (
          <button key={move.state} type="button" onClick={() => act(() => client.moveTask(task.id, { state: move.state, ...message }))}>{move.label}</button>
        ))}
      </div>
    );
  } else if (open) {
    controls = (
      <div class="task-moves">
        {task.state === 'input-required' && (
          <>
            <label for={`answer-${task.id}`}>Answer</label>
            <input id={`answer-${task.id}`} type="text" value={text} maxLength={2000} onInput={(e) => setText((e.target as HTMLInputElement).value)} />
            <button type="button" disabled={text.trim() === ''} onClick={() => act(() => client.moveTask(task.id, { state: 'working', message: { body: text.trim() } }))}>Send answer</button>
          </>
        )}
        <button type="button" class="secondary" onClick={() => act(() => client.moveTask(task.id, { state: 'canceled', ...message }))}>Cancel</button>
      </div>
    );
  }

  return (
    <li class="task" aria-labelledby={titleId}>
      <h3 id={titleId}>{task.title}</h3>
      <p class="task-meta">
        {task.kind === 'approval' ? 'Approval' : 'Task'} {other}: <strong class={`task-state state-${task.state}`}>{task.state}</strong>
        {task.result !== null && typeof task.result.decision === 'string' ? ` (${task.result.decision})` : ''}
      </p>
      {controls}
    </li>
  );
}
