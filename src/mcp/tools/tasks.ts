import { TASK_LEASE_SECONDS, TASK_MAX_ATTEMPTS, TASK_STATES, TASK_WAIT_MAX_SECONDS } from '@agent-messaging/protocol';
import { validationError } from '../../errors.js';
import type { AppContext } from '../../context.js';
import { isTerminal, type Task } from '../../core/tasks/task.js';
import { Type } from '../../core/validation.js';
import { args, defineTool, LIMIT, ROOM } from './define.js';

/** Tasks and approvals between agents (docs/tasks.md; REST: tasks.routes.ts). */

const TASK_ID = Type.String({ minLength: 1, maxLength: 64, description: 'The id (a UUID) of a task, as create_task or list_tasks show it.' });
const TASK_WAIT = Type.Number({ minimum: 0, maximum: TASK_WAIT_MAX_SECONDS, description: `Seconds to wait (0 to ${TASK_WAIT_MAX_SECONDS}, default 0).` });
const TASK_STATE = Type.String({ enum: [...TASK_STATES], description: `One of ${TASK_STATES.join(', ')}.` });
const AGENT_REF = Type.String({ minLength: 1, maxLength: 64, description: 'An agent: its id (a UUID) or its name, as list_agents shows them.' });

const LEASE_SECONDS = Type.Integer({ description: `Seconds the task stays yours without a move or heartbeat_task (${TASK_LEASE_SECONDS.min} to ${TASK_LEASE_SECONDS.max}, default ${TASK_LEASE_SECONDS.default}).` });

const queuePart = (t: Task): string => (t.queueId === null ? ''
  : `, queue ${t.queueId} (claim ${t.claim}, attempt ${t.attempts} of ${t.maxAttempts}${t.leaseExpiresAt ? `, lease until ${t.leaseExpiresAt}` : ''})`);

const renderTask = (t: Task): string =>
  `Task ${t.id} (${t.kind}) "${t.title}": ${t.state}; requester ${t.requesterId}, assignee ${t.assigneeId ?? 'none (unclaimed)'}, room ${t.roomId}${queuePart(t)}${t.result ? `, result ${JSON.stringify(t.result)}` : ''}${t.dueAt ? `, due ${t.dueAt}` : ''}; updated ${t.updatedAt}.`;

/** The create_task / request_approval body of POST /api/v1/tasks, the assignee resolved by name. */
async function taskInput(ctx: AppContext, assignee: string | undefined, fields: {
  title: string; kind?: string; body?: string; data?: Record<string, unknown>; attachments?: string[]; room?: string; dueAt?: string; clientTaskId?: string;
  queue?: string; maxAttempts?: number;
}): Promise<Record<string, unknown>> {
  const input: Record<string, unknown> = {};
  if (fields.body !== undefined) input.body = fields.body;
  if (fields.data !== undefined) input.data = fields.data;
  if (fields.attachments !== undefined) input.attachments = fields.attachments;
  const body: Record<string, unknown> = { title: fields.title };
  if (assignee !== undefined) body.assignee = (await ctx.agents.resolveIds([assignee]))[0];
  if (fields.queue !== undefined) body.queue = await ctx.rooms.resolveId(fields.queue, 'queue');
  if (fields.maxAttempts !== undefined) body.maxAttempts = fields.maxAttempts;
  if (Object.keys(input).length > 0) body.input = input;
  if (fields.kind !== undefined) body.kind = fields.kind;
  if (fields.room !== undefined) body.room = await ctx.rooms.resolveId(fields.room, 'room');
  if (fields.dueAt !== undefined) body.dueAt = fields.dueAt;
  if (fields.clientTaskId !== undefined) body.clientTaskId = fields.clientTaskId;
  return body;
}

export const TASK_TOOLS = {
  create_task: defineTool({
    title: 'Hand a task to another agent',
    description: 'Creates a task (kind "task", default) or an approval for another agent, in the direct room of you two (or in `room`, a group room of which both of you are members). It starts in "submitted"; a message in the room tells the assignee. '
      + 'Or, with `queue` (a group room of which you are a member) instead of `assignee`, puts it in that queue, unassigned, for any member to take with claim_task. '
      + 'Follow it with get_task (wait_seconds to wait for a change). A clientTaskId of your choice makes a retry safe.',
    input: args({
      assignee: Type.Optional(AGENT_REF),
      queue: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Instead of assignee: a group room (id or slug) whose members may claim the task.' })),
      maxAttempts: Type.Optional(Type.Integer({ description: `With queue: claims before a lease running out fails the task (${TASK_MAX_ATTEMPTS.min} to ${TASK_MAX_ATTEMPTS.max}, default ${TASK_MAX_ATTEMPTS.default}).` })),
      title: Type.String({ minLength: 1, maxLength: 200, description: 'What is to be done (1 to 200 characters).' }),
      kind: Type.Optional(Type.String({ enum: ['task', 'approval'], description: '"task" (default) or "approval".' })),
      body: Type.Optional(Type.String({ minLength: 1, description: 'The details, as the message that hands it over (default: the title).' })),
      data: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'Structured data for the message.' })),
      attachments: Type.Optional(Type.Array(Type.String(), { maxItems: 10, description: 'File ids for the message.' })),
      room: Type.Optional(ROOM),
      dueAt: Type.Optional(Type.String({ description: 'An ISO 8601 time: a task not finished by then fails as expired.' })),
      clientTaskId: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Your own id for this task, for safe retries.' })),
    }),
    fields: { 'input.data': 'data' },
    readOnly: false,
    async run({ assignee, ...fields }, { ctx, principal }) {
      const { task, created } = await ctx.tasks.create(principal, await taskInput(ctx, assignee, fields));
      return { data: { task }, text: `${created ? 'Created' : 'Already created earlier with this clientTaskId'}: ${renderTask(task)}` };
    },
  }),

  get_task: defineTool({
    title: 'Read a task',
    description: `Returns a task and its history. With wait_seconds (up to ${TASK_WAIT_MAX_SECONDS}) it waits until the task changes after changed_after (default: now) or is finished, or the time runs out.`,
    input: args({ taskId: TASK_ID, wait_seconds: Type.Optional(TASK_WAIT), changed_after: Type.Optional(Type.String({ description: 'An ISO 8601 time (default: now).' })) }),
    fields: { wait: 'wait_seconds', changedAfter: 'changed_after' },
    readOnly: true,
    async run({ taskId, wait_seconds, changed_after }, { ctx, principal, signal }) {
      const task = await ctx.tasks.get(principal, taskId, { wait: wait_seconds, changedAfter: changed_after }, signal);
      return { data: { task }, text: renderTask(task) };
    },
  }),

  list_tasks: defineTool({
    title: 'List my tasks',
    description: `Lists the tasks you requested or are assigned (or, with queue, the tasks of that queue), newest change first. as: "assignee" or "requester" (default both); state: a comma-separated list of states. With wait_seconds (up to ${TASK_WAIT_MAX_SECONDS}) and nothing matching, waits for a matching task to be created or moved.`,
    input: args({
      queue: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'A queue: a room (id or slug) of which you are a member.' })),
      as: Type.Optional(Type.String({ enum: ['assignee', 'requester'], description: '"assignee" or "requester" (default both).' })),
      state: Type.Optional(Type.String({ maxLength: 200, description: `A comma-separated list of ${TASK_STATES.join(', ')}.` })),
      cursor: Type.Optional(Type.String({ maxLength: 200, description: 'The nextCursor of the previous call.' })),
      limit: Type.Optional(LIMIT),
      wait_seconds: Type.Optional(TASK_WAIT),
    }),
    fields: { wait: 'wait_seconds' },
    readOnly: true,
    async run({ wait_seconds, queue, ...query }, { ctx, principal, signal }) {
      const queueId = queue === undefined ? undefined : await ctx.rooms.resolveId(queue, 'queue');
      const page = await ctx.tasks.list(principal, { ...query, queue: queueId, wait: wait_seconds }, signal);
      const text = page.tasks.length === 0 ? 'No tasks.' : [...page.tasks.map(renderTask), page.hasMore ? `More: cursor ${page.nextCursor}` : ''].filter(Boolean).join('\n');
      return { data: { ...page }, text };
    },
  }),

  update_task: defineTool({
    title: 'Move a task to another state',
    description: 'The assignee: submitted -> working, rejected, completed, failed; working -> input-required, completed, failed; input-required -> working, completed, failed. The requester: cancel (canceled) any unfinished task, or answer an input-required task (working, with body). An approval is completed with result {"decision": "approved"} or {"decision": "denied"}.',
    input: args({
      taskId: TASK_ID,
      state: TASK_STATE,
      body: Type.Optional(Type.String({ minLength: 1, description: 'A message with the move (required to answer an input-required task).' })),
      data: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'Structured data for the message.' })),
      attachments: Type.Optional(Type.Array(Type.String(), { maxItems: 10, description: 'File ids for the message.' })),
      result: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'The outcome (an object).' })),
    }),
    fields: { message: 'body', 'result.decision': 'result' },
    readOnly: false,
    async run({ taskId, state, body, data, attachments, result }, { ctx, principal }) {
      const message: Record<string, unknown> = {};
      if (body !== undefined) message.body = body;
      if (data !== undefined) message.data = data;
      if (attachments !== undefined) message.attachments = attachments;
      const task = await ctx.tasks.move(principal, taskId, { state, ...(Object.keys(message).length > 0 ? { message } : {}), ...(result === undefined ? {} : { result }) });
      return { data: { task }, text: `Moved: ${renderTask(task)}` };
    },
  }),

  claim_task: defineTool({
    title: 'Take a task from a queue',
    description: `Claims a queued task: the one named by taskId, or the oldest unclaimed one of queue (give one of the two). It becomes yours for leaseSeconds; every move (update_task) and heartbeat_task renews that, and if it runs out the task goes back to the queue for someone else. `
      + `With queue and wait_seconds (up to ${TASK_WAIT_MAX_SECONDS}) it waits for a task to arrive. Returns the task, or says none was there. CONFLICT when someone else claimed it first.`,
    input: args({
      queue: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'The queue: a room (id or slug) of which you are a member.' })),
      taskId: Type.Optional(TASK_ID),
      leaseSeconds: Type.Optional(LEASE_SECONDS),
      wait_seconds: Type.Optional(TASK_WAIT),
    }),
    fields: { wait: 'wait_seconds' },
    readOnly: false,
    async run({ queue, taskId, leaseSeconds, wait_seconds }, { ctx, principal, signal }) {
      if ((queue === undefined) === (taskId === undefined)) throw validationError({ queue: 'give queue or taskId (one of the two)' });
      const lease = leaseSeconds === undefined ? {} : { leaseSeconds };
      if (taskId !== undefined) {
        if (wait_seconds !== undefined) throw validationError({ wait: 'only with queue' });
        const task = await ctx.tasks.claim(principal, taskId, lease);
        return { data: { task }, text: `Claimed: ${renderTask(task)}` };
      }
      const queueId = await ctx.rooms.resolveId(queue!, 'queue');
      const task = await ctx.tasks.claimNext(principal, { queue: queueId, ...lease, ...(wait_seconds === undefined ? {} : { wait: wait_seconds }) }, signal);
      return task === null ? { data: { task: null }, text: 'No task to claim in this queue.' } : { data: { task }, text: `Claimed: ${renderTask(task)}` };
    },
  }),

  heartbeat_task: defineTool({
    title: 'Keep a claimed task',
    description: 'Renews your lease on a task you claimed (claim_task), so that it stays yours while you work on it: call it well before leaseExpiresAt. CONFLICT when it is no longer yours (the lease ran out).',
    input: args({ taskId: TASK_ID, leaseSeconds: Type.Optional(LEASE_SECONDS) }),
    readOnly: false,
    async run({ taskId, leaseSeconds }, { ctx, principal }) {
      const task = await ctx.tasks.heartbeat(principal, taskId, leaseSeconds === undefined ? {} : { leaseSeconds });
      return { data: { task }, text: `Renewed: ${renderTask(task)}` };
    },
  }),

  request_approval: defineTool({
    title: 'Ask an agent or a person for approval, and wait',
    description: `Creates an approval for the approver and waits up to wait_seconds (0 to ${TASK_WAIT_MAX_SECONDS}) for the decision. Returns the task: completed with result.decision "approved" or "denied", or failed, canceled or rejected; or still submitted or working when the wait ended (then follow it with get_task).`,
    input: args({
      approver: AGENT_REF,
      title: Type.String({ minLength: 1, maxLength: 200, description: 'What is to be approved (1 to 200 characters).' }),
      body: Type.Optional(Type.String({ minLength: 1, description: 'The details (default: the title).' })),
      wait_seconds: Type.Optional(TASK_WAIT),
    }),
    fields: { assignee: 'approver', wait: 'wait_seconds' },
    readOnly: false,
    async run({ approver, title, body, wait_seconds }, { ctx, principal, signal }) {
      let { task } = await ctx.tasks.create(principal, await taskInput(ctx, approver, { title, kind: 'approval', ...(body === undefined ? {} : { body }) }));
      const deadline = Date.now() + (wait_seconds ?? 0) * 1000;
      while (!isTerminal(task.state) && !signal.aborted) {
        const left = (deadline - Date.now()) / 1000;
        if (left <= 0) break;
        task = await ctx.tasks.get(principal, task.id, { wait: Math.min(TASK_WAIT_MAX_SECONDS, Math.round(left * 1000) / 1000), changedAfter: task.updatedAt }, signal);
      }
      return { data: { task }, text: isTerminal(task.state) ? `Decided: ${renderTask(task)}` : `No decision yet: ${renderTask(task)}` };
    },
  }),
};
