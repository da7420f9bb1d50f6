import { IdString, Timestamp } from './common.schema.js';
import { Type, Text, Uuid } from './text.js';

/** The seven task states (those of the Agent2Agent protocol); the last four are terminal (docs/tasks.md). */
export const TASK_STATES = ['submitted', 'working', 'input-required', 'completed', 'failed', 'canceled', 'rejected'] as const;
export type TaskState = (typeof TASK_STATES)[number];
export const TERMINAL_TASK_STATES: readonly TaskState[] = ['completed', 'failed', 'canceled', 'rejected'];
export const TASK_KINDS = ['task', 'approval'] as const;
export type TaskKind = (typeof TASK_KINDS)[number];
export const TASK_TITLE_MAX = 200;
export const TASK_BODY_MAX = 16_384;
export const TASK_WAIT_MAX_SECONDS = 30;
export const TASK_LIST_LIMITS = { default: 50, max: 100 };
/** A task's `result` and a message's `data` as JSON text, at most this many bytes. */
export const TASK_RESULT_MAX_BYTES = 16_384;
/** A claim's lease, in seconds (docs/tasks.md, "Queues"). */
export const TASK_LEASE_SECONDS = { min: 10, max: 3600, default: 300 };
/** How many claims a queued task may have before its last lease running out fails it. */
export const TASK_MAX_ATTEMPTS = { min: 1, max: 10, default: 3 };

const TaskStateSchema = Type.Union(TASK_STATES.map((s) => Type.Literal(s)), { description: 'submitted, working, input-required, completed, failed, canceled or rejected' });
const TaskKindSchema = Type.Union(TASK_KINDS.map((k) => Type.Literal(k)), { description: 'task or approval' });

/** The message part of a create (`input`) or a move (`message`); `data` and `attachments` as on a send. */
const TaskMessageInput = Type.Object(
  {
    body: Type.Optional(Text({ minLength: 1, maxLength: TASK_BODY_MAX })),
    data: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    attachments: Type.Optional(Type.Array(Uuid(), { maxItems: 10 })),
  },
  { additionalProperties: true },
);

/** `POST /api/v1/tasks`. */
export const CreateTaskInput = Type.Object(
  {
    assignee: Type.Optional(Type.String({ description: 'The assignee agent id (or `queue`, not both)' })),
    queue: Type.Optional(Uuid({ description: 'A group room of which the caller is a member: the task waits there, unassigned, for one of its members to claim it (or `assignee`, not both)' })),
    maxAttempts: Type.Optional(Type.Integer({ minimum: TASK_MAX_ATTEMPTS.min, maximum: TASK_MAX_ATTEMPTS.max, description: 'Claims before a lease running out fails the task (default 3)' })),
    title: Text({ minLength: 1, maxLength: TASK_TITLE_MAX }),
    kind: Type.Optional(TaskKindSchema),
    input: Type.Optional(TaskMessageInput),
    room: Type.Optional(Uuid({ description: 'A group room of which both are members; absent: their direct room' })),
    dueAt: Type.Optional(Type.String({ description: 'A future time: a task not terminal by then fails with result {reason: "expired"}' })),
    clientTaskId: Type.Optional(Text({ minLength: 1, maxLength: 64 })),
  },
  { additionalProperties: true, title: 'CreateTaskInput' },
);

/** `POST /api/v1/tasks/:id/state`. */
export const MoveTaskInput = Type.Object(
  {
    state: Type.String({ description: 'The new state' }),
    message: Type.Optional(TaskMessageInput),
    result: Type.Optional(Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()])),
  },
  { additionalProperties: true },
);

export const TaskHistoryEntrySchema = Type.Object(
  {
    state: TaskStateSchema,
    at: Timestamp(),
    by: Type.Union([IdString(), Type.Null()], { description: 'Who moved it; null for the expiry' }),
    messageId: Type.Union([IdString(), Type.Null()], { description: 'The message the move posted' }),
    reason: Type.Optional(Type.String({ description: '`claimed` (a claim), `lease-expired` (the claimer\'s lease ran out); absent otherwise' })),
  },
  { title: 'TaskHistoryEntry' },
);

export const TaskSchema = Type.Object(
  {
    id: IdString(),
    kind: TaskKindSchema,
    title: Type.String(),
    requesterId: IdString(),
    assigneeId: Type.Union([IdString(), Type.Null()], { description: 'Null while a queued task is unclaimed' }),
    roomId: IdString(),
    queueId: Type.Union([IdString(), Type.Null()], { description: 'The queue (a room) a queued task was created in; null otherwise' }),
    leaseExpiresAt: Type.Union([Timestamp(), Type.Null()], { description: 'When the claimer\'s lease runs out; null unless claimed and not terminal' }),
    attempts: Type.Integer({ description: 'Claims so far' }),
    maxAttempts: Type.Integer({ description: 'Claims allowed before a lease running out fails it' }),
    claim: Type.Integer({ description: 'Grows with every claim (0 until claimed): a fencing number' }),
    state: TaskStateSchema,
    result: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()]),
    dueAt: Type.Union([Timestamp(), Type.Null()]),
    createdAt: Timestamp(),
    updatedAt: Timestamp(),
    history: Type.Array(TaskHistoryEntrySchema, { description: 'Oldest first, the creation first' }),
  },
  { title: 'Task' },
);

/** `task` on a message: the task and the state the move that posted it set. */
export const MessageTaskSchema = Type.Object(
  { id: IdString(), kind: TaskKindSchema, title: Type.String(), state: TaskStateSchema },
  { title: 'MessageTask' },
);

export const TaskPageSchema = Type.Object(
  {
    tasks: Type.Array(TaskSchema, { description: 'Newest updatedAt first' }),
    nextCursor: Type.Union([Type.String(), Type.Null()], { description: 'Opaque; null on the last page' }),
    hasMore: Type.Boolean(),
  },
  { title: 'TaskPage' },
);

export const TaskParams = Type.Object({ id: Uuid({ description: 'Task id' }) });

export const GetTaskQuerySchema = Type.Object({
  wait: Type.Optional(Type.Integer({ minimum: 0, maximum: TASK_WAIT_MAX_SECONDS, description: 'Seconds to hold the request until the task changes' })),
  changedAfter: Type.Optional(Type.String({ description: 'Default: the time of the request' })),
});

export const ListTasksQuerySchema = Type.Object({
  queue: Type.Optional(Uuid({ description: 'The tasks of this queue (a room of which the caller is a member), whoever their sides' })),
  as: Type.Optional(Type.String({ description: 'assignee or requester (default: both)' })),
  state: Type.Optional(Type.String({ description: 'A comma-separated list of states (default: every state)' })),
  cursor: Type.Optional(Type.String({ description: 'The nextCursor of the previous page' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: TASK_LIST_LIMITS.max, default: TASK_LIST_LIMITS.default })),
  wait: Type.Optional(Type.Integer({ minimum: 0, maximum: TASK_WAIT_MAX_SECONDS })),
});

/** `POST /api/v1/tasks/:id/claim` and `POST /api/v1/tasks/:id/heartbeat`. */
export const ClaimTaskInput = Type.Object(
  { leaseSeconds: Type.Optional(Type.Integer({ minimum: TASK_LEASE_SECONDS.min, maximum: TASK_LEASE_SECONDS.max, description: 'The lease, 10..3600 seconds (default 300)' })) },
  { additionalProperties: true, title: 'ClaimTaskInput' },
);

/** `POST /api/v1/tasks/claim`: the oldest unclaimed task of a queue. */
export const ClaimNextTaskInput = Type.Object(
  {
    queue: Uuid({ description: 'The queue (a room of which the caller is a member)' }),
    leaseSeconds: Type.Optional(Type.Integer({ minimum: TASK_LEASE_SECONDS.min, maximum: TASK_LEASE_SECONDS.max, description: 'The lease, 10..3600 seconds (default 300)' })),
    wait: Type.Optional(Type.Number({ minimum: 0, maximum: TASK_WAIT_MAX_SECONDS, description: 'Seconds to hold the request until a task can be claimed' })),
  },
  { additionalProperties: true, title: 'ClaimNextTaskInput' },
);
