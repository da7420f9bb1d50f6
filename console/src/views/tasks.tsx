import { useEffect, useState } from 'preact/hooks';
import type { Message, Task, TaskState } from '@agent-messaging/client';
import { describeError, formatTime, nameOf, type Session } from '../session.js';
import { Attachments } from './attachments.js';
import { DataList } from './data-list.js';
import { limiter } from '../limited.js';

const TERMINAL: TaskState[] = ['completed', 'failed', 'canceled', 'rejected'];

type Move = { state: TaskState; label: string };
const START: Move = { state: 'working', label: 'Start' };
const COMPLETE: Move = { state: 'completed', label: 'Complete' };
const FAIL: Move = { state: 'failed', label: 'Fail' };
const REJECT: Move = { state: 'rejected', label: 'Reject' };
/** The moves that end a task badly: styled apart from Complete, so one is not pressed for the other. */
const DANGER: TaskState[] = ['failed', 'rejected'];

/** The moves the assignee may make from each state (docs/tasks.md), as buttons. */
const ASSIGNEE_MOVES: Partial<Record<TaskState, Move[]>> = {
  submitted: [START, COMPLETE, FAIL, REJECT],
  working: [{ state: 'input-required', label: 'Ask for input' }, COMPLETE, FAIL],
  'input-required': [{ state: 'working', label: 'Resume' }, COMPLETE, FAIL],
};

/** At most this many creation messages are read at once (each task's body, data and files). */
const limited = limiter(4);
/** Creation messages already read, by message id: a task moved between lists is not read again. */
const creations = new WeakMap<Session, Map<string, Promise<Message>>>();
function creationOf(session: Session, task: Task): Promise<Message> | null {
  const messageId = task.history[0]?.messageId;
  if (messageId === undefined || messageId === null) return null;
  const cache = creations.get(session) ?? new Map<string, Promise<Message>>();
  creations.set(session, cache);
  let read = cache.get(messageId);
  if (read === undefined) {
    // The thread of a message that is not a reply has it as its root: the one read there is.
    read = limited(() => session.client.thread(task.roomId, messageId, { limit: 1 })).then((t) => t.root);
    read.catch(() => cache.delete(messageId));
    cache.set(messageId, read);
  }
  return read;
}

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

/** One side's tasks: the open ones first, the finished ones apart below them. */
function TaskList({ tasks, session, side, act }: { tasks: Task[] | null; session: Session; side: 'assignee' | 'requester'; act: (run: () => Promise<Task>) => void }) {
  if (tasks === null) return <p>Loading…</p>;
  if (tasks.length === 0) return <p>No tasks.</p>;
  const open = tasks.filter((t) => !TERMINAL.includes(t.state));
  const finished = tasks.filter((t) => TERMINAL.includes(t.state));
  const group = (name: string, list: Task[]) => {
    const id = `tasks-${side}-${name.toLowerCase()}`;
    return (
      <div class={`task-group ${name.toLowerCase()}`}>
        <h3 id={id}>{name}</h3>
        {list.length === 0 ? <p>None.</p> : (
          <ul class="task-list" aria-labelledby={id}>
            {list.map((task) => <TaskItem key={task.id} task={task} session={session} side={side} act={act} />)}
          </ul>
        )}
      </div>
    );
  };
  return <>{group('Open', open)}{group('Finished', finished)}</>;
}

/**
 * What the task asks (docs/tasks.md, Messages: the message its creation posted): its text when it
 * says more than the title, its data and its files; what a person must see before deciding.
 */
function TaskDetails({ session, task }: { session: Session; task: Task }) {
  const [creation, setCreation] = useState<Message | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let current = true;
    creationOf(session, task)?.then((m) => { if (current) setCreation(m); }, (err) => { if (current) setError(describeError(err)); });
    return () => { current = false; };
  }, [session, task]);
  if (error !== null) return <p class="error">The task's request cannot be read: {error}</p>;
  if (creation === null) return null;
  if (creation.deletedAt !== null) return <p class="task-body deleted"><em>The request was deleted.</em></p>;
  return (
    <div class="task-details">
      {creation.body !== task.title && <p class="body task-body">{creation.body}</p>}
      {creation.data !== null && <DataList data={creation.data} label={`Data of ${task.title}`} />}
      <Attachments session={session} attachments={creation.attachments} />
    </div>
  );
}

function TaskItem({ task, session, side, act }: { task: Task; session: Session; side: 'assignee' | 'requester'; act: (run: () => Promise<Task>) => void }) {
  const [text, setText] = useState('');
  const [details, setDetails] = useState(false);
  const client = session.client;
  const open = !TERMINAL.includes(task.state);
  const other = side === 'assignee' ? `from ${nameOf(session, task.requesterId)}` : task.assigneeId === null ? 'in the queue, unclaimed' : `to ${nameOf(session, task.assigneeId)}`;
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
          <button key={move.state} type="button" class={DANGER.includes(move.state) ? 'danger' : undefined}
            onClick={() => act(() => client.moveTask(task.id, { state: move.state, ...message }))}>{move.label}</button>
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
    <li class={open ? 'task' : 'task finished'} aria-labelledby={titleId}>
      <h4 id={titleId}>{task.title}</h4>
      <p class="task-meta">
        {task.kind === 'approval' ? 'Approval' : 'Task'} {other}: <strong class={`task-state state-${task.state}`}>{task.state}</strong>
        {task.result !== null && typeof task.result.decision === 'string' ? ` (${task.result.decision})` : ''}
        {task.dueAt !== null && open && <>{' · '}<span class="due">due <time dateTime={task.dueAt} title={task.dueAt}>{formatTime(task.dueAt)}</time></span></>}
      </p>
      {open ? <TaskDetails session={session} task={task} /> : (
        <>
          <button type="button" class="secondary small" aria-expanded={details} onClick={() => setDetails(!details)}>Details</button>
          {details && <TaskDetails session={session} task={task} />}
        </>
      )}
      {controls}
    </li>
  );
}
