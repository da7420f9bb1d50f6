import type { Task, TaskState } from '../index.js';
import { optionalString, UsageError, wholeNumber, type Command } from './command.js';
import { CONNECTION, json, print, printTable, withClient } from './with-client.js';

/** Tasks and approvals (docs/tasks.md): an AGENT is an id or a name, a ROOM an id or a slug. */

const taskRow = (t: Task): string[] => [t.id, t.kind, t.state, t.title, t.updatedAt];

/** What a claim or a heartbeat prints: the task and until when it is the agent's. */
const claimedLine = (t: Task): string => `task ${t.id} ${t.state} "${t.title}" claim ${t.claim}, lease until ${t.leaseExpiresAt ?? '-'}`;

const leaseOption = (input: Parameters<Command['run']>[0]): { leaseSeconds?: number } => {
  const leaseSeconds = wholeNumber(optionalString(input, 'lease'), '--lease', 3600);
  return leaseSeconds === undefined ? {} : { leaseSeconds };
};

/** `ams approve ID` / `ams deny ID`: completes an approval assigned to the agent with that decision. */
function decisionCommand(decision: 'approved' | 'denied'): Command {
  const verb = decision === 'approved' ? 'approve' : 'deny';
  return {
    usage: `${verb} ID [--comment <text>] [--json]`,
    summary: `${decision === 'approved' ? 'Approve' : 'Deny'} an approval assigned to you (it becomes completed with result.decision "${decision}"); --comment is posted with it.`,
    options: [...CONNECTION, 'comment', 'json'],
    args: ['ID'],
    fields: { message: '--comment', 'result.decision': 'ID' },
    run: (input) => withClient(input, async (client) => {
      const task = await client.decide(input.args[0]!, decision, optionalString(input, 'comment'));
      if (json(input)) print(task);
      else console.log(`task ${task.id} ${task.state} (${decision})`);
      return 0;
    }),
  };
}

export const taskCommands: Record<string, Command> = {
  tasks: {
    usage: 'tasks [--queue <room>] [--as assignee|requester] [--state <s1,s2>] [--wait <seconds>] [--limit <n>] [--json]',
    summary: "The agent's tasks, newest change first: those assigned to it and those it requested (with --queue, that queue's); --wait holds the request (up to 30 s) while none matches.",
    options: [...CONNECTION, 'queue', 'as', 'state', 'wait', 'limit', 'json'],
    fields: { queue: '--queue', as: '--as', state: '--state', wait: '--wait', limit: '--limit' },
    run(input) {
      const wait = wholeNumber(optionalString(input, 'wait'), '--wait', 30);
      const limit = wholeNumber(optionalString(input, 'limit'), '--limit', 100);
      const as = optionalString(input, 'as');
      if (as !== undefined && as !== 'assignee' && as !== 'requester') throw new UsageError('--as must be assignee or requester');
      const state = optionalString(input, 'state')?.split(',') as TaskState[] | undefined;
      return withClient(input, async (client) => {
        const queue = optionalString(input, 'queue');
        const page = await client.tasks({ ...(queue === undefined ? {} : { queue }), ...(as === undefined ? {} : { as }), ...(state === undefined ? {} : { state }), ...(wait === undefined ? {} : { wait }), ...(limit === undefined ? {} : { limit }) });
        if (json(input)) print(page);
        else if (page.tasks.length === 0) console.log('no tasks');
        else printTable(page.tasks.map(taskRow));
        return 0;
      });
    },
  },
  task: {
    usage: 'task ID [--wait <seconds>] [--json]',
    summary: 'A task and its history; --wait holds the request (up to 30 s) until it changes.',
    options: [...CONNECTION, 'wait', 'json'],
    args: ['ID'],
    fields: { wait: '--wait', taskId: 'ID' },
    run(input) {
      const wait = wholeNumber(optionalString(input, 'wait'), '--wait', 30);
      return withClient(input, async (client) => {
        const task = await client.task(input.args[0]!, wait === undefined ? {} : { wait });
        if (json(input)) print(task);
        else {
          printTable([taskRow(task)]);
          for (const h of task.history) console.log(`  ${h.at}  ${h.state}${h.reason === undefined ? (h.by === null ? ' (expired)' : '') : ` (${h.reason})`}`);
        }
        return 0;
      });
    },
  },
  'task create': {
    usage: 'task create AGENT TITLE... [--kind task|approval] [--message <text>] [--room <room>] [--json]',
    summary: 'Hand a task (or an approval) to an agent (id or name), in your direct room with it or in --room.',
    options: [...CONNECTION, 'kind', 'message', 'room', 'json'],
    args: ['AGENT', 'TITLE...'],
    fields: { assignee: 'AGENT', title: 'TITLE', kind: '--kind', room: '--room', 'input.body': '--message' },
    run: (input) => withClient(input, async (client) => {
      const kind = optionalString(input, 'kind');
      if (kind !== undefined && kind !== 'task' && kind !== 'approval') throw new UsageError('--kind must be task or approval');
      const body = optionalString(input, 'message');
      const room = optionalString(input, 'room');
      const task = await client.createTask({
        assignee: input.args[0]!, title: input.args.slice(1).join(' '), ...(kind === undefined ? {} : { kind }),
        ...(body === undefined ? {} : { input: { body } }), ...(room === undefined ? {} : { room }),
      });
      if (json(input)) print(task);
      else console.log(`task ${task.id} ${task.state}`);
      return 0;
    }),
  },
  'task move': {
    usage: 'task move ID STATE [--message <text>] [--json]',
    summary: 'Move a task to STATE (docs/tasks.md has the table); --message goes with it (needed to answer an input-required task).',
    options: [...CONNECTION, 'message', 'json'],
    args: ['ID', 'STATE'],
    fields: { state: 'STATE', message: '--message' },
    run: (input) => withClient(input, async (client) => {
      const body = optionalString(input, 'message');
      const task = await client.moveTask(input.args[0]!, { state: input.args[1]! as TaskState, ...(body === undefined ? {} : { message: { body } }) });
      if (json(input)) print(task);
      else console.log(`task ${task.id} ${task.state}`);
      return 0;
    }),
  },
  'task enqueue': {
    usage: 'task enqueue QUEUE TITLE... [--message <text>] [--max-attempts <n>] [--json]',
    summary: 'Put a task in a queue (a group room you are a member of, id or slug), unassigned, for a member to claim (ams claim).',
    options: [...CONNECTION, 'message', 'max-attempts', 'json'],
    args: ['QUEUE', 'TITLE...'],
    fields: { queue: 'QUEUE', title: 'TITLE', maxAttempts: '--max-attempts', 'input.body': '--message' },
    run(input) {
      const maxAttempts = wholeNumber(optionalString(input, 'max-attempts'), '--max-attempts', 10);
      return withClient(input, async (client) => {
        const body = optionalString(input, 'message');
        const task = await client.createTask({
          queue: input.args[0]!, title: input.args.slice(1).join(' '), ...(maxAttempts === undefined ? {} : { maxAttempts }), ...(body === undefined ? {} : { input: { body } }),
        });
        if (json(input)) print(task);
        else console.log(`task ${task.id} ${task.state} in queue ${task.queueId ?? '-'}`);
        return 0;
      });
    },
  },
  claim: {
    usage: 'claim QUEUE [--lease <seconds>] [--wait <seconds>] [--json]',
    summary: 'Claim the oldest unclaimed task of QUEUE (a room, id or slug): it is yours for --lease seconds (10..3600, default 300), renewed by your moves and `ams task heartbeat`; --wait holds the request (up to 30 s) until one comes. Exit code 3 when there was none.',
    options: [...CONNECTION, 'lease', 'wait', 'json'],
    args: ['QUEUE'],
    fields: { queue: 'QUEUE', leaseSeconds: '--lease', wait: '--wait' },
    run(input) {
      const wait = wholeNumber(optionalString(input, 'wait'), '--wait', 30);
      const lease = leaseOption(input);
      return withClient(input, async (client) => {
        const task = await client.claimNextTask(input.args[0]!, { ...lease, ...(wait === undefined ? {} : { wait }) });
        if (json(input)) print(task);
        else console.log(task === null ? 'no task to claim' : claimedLine(task));
        return task === null ? 3 : 0;
      });
    },
  },
  'task claim': {
    usage: 'task claim ID [--lease <seconds>] [--json]',
    summary: 'Claim one queued task by its id (409 naming its holder when another agent has it).',
    options: [...CONNECTION, 'lease', 'json'],
    args: ['ID'],
    fields: { leaseSeconds: '--lease', taskId: 'ID' },
    run(input) {
      const lease = leaseOption(input);
      return withClient(input, async (client) => {
        const task = await client.claimTask(input.args[0]!, lease);
        if (json(input)) print(task);
        else console.log(claimedLine(task));
        return 0;
      });
    },
  },
  'task heartbeat': {
    usage: 'task heartbeat ID [--lease <seconds>] [--json]',
    summary: 'Renew your lease on a task you claimed (409 when it is no longer yours: its lease ran out).',
    options: [...CONNECTION, 'lease', 'json'],
    args: ['ID'],
    fields: { leaseSeconds: '--lease', taskId: 'ID' },
    run(input) {
      const lease = leaseOption(input);
      return withClient(input, async (client) => {
        const task = await client.heartbeatTask(input.args[0]!, lease);
        if (json(input)) print(task);
        else console.log(claimedLine(task));
        return 0;
      });
    },
  },
  approve: decisionCommand('approved'),
  deny: decisionCommand('denied'),
};
