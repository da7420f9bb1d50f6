import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../context.js';
import {
  ClaimNextTaskInput, ClaimTaskInput, CreateTaskInput, GetTaskQuerySchema, ListTasksQuerySchema, MoveTaskInput, TaskPageSchema, TaskParams, TaskSchema,
} from '@agent-messaging/protocol';
import type { GetTaskQuery, ListTasksQuery } from '../../core/tasks/tasks.service.js';
import { describe, SECURITY } from '../openapi.js';

/** A held request stops waiting when its client goes away. */
const goneSignal = (reply: { raw: { once(event: 'close', listener: () => void): unknown } }): AbortSignal => {
  const gone = new AbortController();
  reply.raw.once('close', () => gone.abort());
  return gone.signal;
};

/** Tasks and approvals (docs/tasks.md). */
export function tasksRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.post('/api/v1/tasks', {
    schema: describe({
      operationId: 'createTask', summary: 'Hand a task (or an approval) to another agent', tags: ['tasks'], security: SECURITY.jwt,
      description: 'The task starts in `submitted` and lives in `room` (a group room of which both are members) or, without it, in the direct room of the two (opened when needed). '
        + 'With `queue` (a group room of which the caller is a member) instead of `assignee`, it waits there unassigned (`assigneeId` null) for a member to claim it; `maxAttempts` 1..10 (3) claims. '
        + 'Its creation posts a message in that room (input.body, or else the title) carrying `task`, for the assignee\'s attention. '
        + 'A `clientTaskId` repeat by the same requester answers 200 with the original task. '
        + 'Errors: 400 (`details.assignee` not a UUID or the caller, both or neither of `assignee` and `queue`, `details.queue` direct or the caller not a member, `details.room` direct or either not a member, `details.dueAt` not in the future, `details.title`), 404 unknown assignee or room, 403 disabled assignee or the token lacks tasks:write.',
      body: CreateTaskInput,
      success: {
        201: { schema: TaskSchema, description: 'The task, just created' },
        200: { schema: TaskSchema, description: 'The task created before with this clientTaskId' },
      },
      errors: [400, 401, 403, 404],
    }),
  }, async (request, reply) => {
    const { task, created } = await ctx.tasks.create(request.principal, request.body);
    return reply.status(created ? 201 : 200).send(task);
  });

  app.post<{ Params: { id: string } }>('/api/v1/tasks/:id/state', {
    schema: describe({
      operationId: 'moveTask', summary: 'Move a task to another state (docs/tasks.md has the transition table)', tags: ['tasks'], security: SECURITY.jwt,
      description: 'The assignee: submitted -> working, rejected, completed, failed; working -> input-required, completed, failed; input-required -> working, completed, failed. '
        + 'The requester: any non-terminal state -> canceled; input-required -> working (with `message`, its answer). '
        + 'An approval is completed only with `result.decision` "approved" or "denied". Every move posts a message in the task\'s room carrying `task`. '
        + 'Errors: 400 `details.state` (not one of the seven), `details.message`, `details["result.decision"]`; 409 `details.state` (the current state) for a move not in the table or from a terminal state, '
        + 'or when another move won a race; 403 an admin who is neither side; 404 an unknown task or an agent who is neither side.',
      params: TaskParams, body: MoveTaskInput,
      success: { 200: { schema: TaskSchema, description: 'The task after the move' } },
      errors: [400, 401, 403, 404, 409],
    }),
  }, async (request) => ctx.tasks.move(request.principal, request.params.id, request.body));

  app.get<{ Params: { id: string }; Querystring: GetTaskQuery }>('/api/v1/tasks/:id', {
    schema: describe({
      operationId: 'getTask', summary: 'A task, with its history; can wait for it to change', tags: ['tasks'], security: SECURITY.jwt,
      description: 'For its requester, its assignee or an admin (404 to anyone else). With `wait` (0..30 seconds) it answers at once when the task\'s updatedAt is later than `changedAfter` '
        + '(default: the time of the request) or its state is terminal, else holds until it changes or the wait ends.',
      params: TaskParams, querystring: GetTaskQuerySchema,
      success: { 200: { schema: TaskSchema, description: 'The task' } },
      errors: [400, 401, 403, 404, 429],
    }),
  }, async (request, reply) => ctx.tasks.get(request.principal, request.params.id, request.query, goneSignal(reply)));

  app.get<{ Querystring: ListTasksQuery }>('/api/v1/tasks', {
    schema: describe({
      operationId: 'listTasks', summary: "The caller's tasks, newest updatedAt first; can wait for one", tags: ['tasks'], security: SECURITY.jwt,
      description: '`queue` a room of which the caller is a member: that queue\'s tasks, whoever their sides (403 not a member). `as` assignee or requester (default both), `state` a comma-separated list (default every state), `cursor` the previous page\'s nextCursor, `limit` 1..100 (50). '
        + 'With `wait` (0..30 seconds) and nothing matching, held until a task matching the query is created or moved (on any node).',
      querystring: ListTasksQuerySchema,
      success: { 200: { schema: TaskPageSchema, description: 'A page of tasks' } },
      errors: [400, 401, 403, 429],
    }),
  }, async (request, reply) => ctx.tasks.list(request.principal, request.query, goneSignal(reply)));

  app.post<{ Params: { id: string } }>('/api/v1/tasks/:id/claim', {
    schema: describe({
      operationId: 'claimTask', summary: 'Claim a queued task', tags: ['tasks'], security: SECURITY.jwt,
      description: 'For a member of the task\'s queue: an unclaimed `submitted` task becomes the caller\'s (`assigneeId`, `attempts` + 1, `claim` + 1, `leaseExpiresAt` now + `leaseSeconds`, 10..3600, default 300). '
        + 'Exactly one of concurrent claims wins, on any nodes. Its moves and heartbeats renew the lease; when it runs out (within 5 s) the task goes back to the queue, or fails once `attempts` reached `maxAttempts`. '
        + 'Errors: 400 `details.leaseSeconds`; 409 `details.assigneeId` (who has it) when it is claimed already or not a queued task; 403 the requester itself; 404 unknown task or not a member of its queue.',
      params: TaskParams, body: ClaimTaskInput,
      success: { 200: { schema: TaskSchema, description: 'The task, now the caller\'s' } },
      errors: [400, 401, 403, 404, 409],
    }),
  }, async (request) => ctx.tasks.claim(request.principal, request.params.id, request.body ?? {}));

  app.post('/api/v1/tasks/claim', {
    schema: describe({
      operationId: 'claimNextTask', summary: 'Claim the oldest unclaimed task of a queue', tags: ['tasks'], security: SECURITY.jwt,
      description: 'For a member of the queue\'s room: claims its oldest unclaimed `submitted` task (by creation; each claimed by one caller only), as `POST /api/v1/tasks/{id}/claim` does. '
        + 'None: 204 at once, or with `wait` (0..30 seconds) held until one can be claimed (on any node), then 200 or 204. Held requests count in the agent\'s wait slots (429 beyond). '
        + 'Errors: 400 `details.queue`, `details.leaseSeconds`, `details.wait`; 403 not a member; 404 unknown room.',
      body: ClaimNextTaskInput,
      success: { 200: { schema: TaskSchema, description: 'The task, now the caller\'s' }, 204: { schema: null, description: 'No task to claim' } },
      errors: [400, 401, 403, 404, 429],
    }),
  }, async (request, reply) => {
    const task = await ctx.tasks.claimNext(request.principal, request.body, goneSignal(reply));
    return task === null ? reply.status(204).send() : task;
  });

  app.post<{ Params: { id: string } }>('/api/v1/tasks/:id/heartbeat', {
    schema: describe({
      operationId: 'heartbeatTask', summary: 'Renew the lease on a claimed task', tags: ['tasks'], security: SECURITY.jwt,
      description: 'For its claimer: `leaseExpiresAt` becomes now + `leaseSeconds` (10..3600, default the claim\'s). '
        + 'Errors: 400 `details.leaseSeconds`; 409 `details.assigneeId` when the task is no longer the caller\'s (its lease ran out: back in the queue or claimed by another), or terminal; 404 unknown task.',
      params: TaskParams, body: ClaimTaskInput,
      success: { 200: { schema: TaskSchema, description: 'The task with its renewed lease' } },
      errors: [400, 401, 403, 404, 409],
    }),
  }, async (request) => ctx.tasks.heartbeat(request.principal, request.params.id, request.body ?? {}));
}
