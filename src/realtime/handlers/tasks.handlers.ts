import type { TasksService } from '../../core/tasks/tasks.service.js';
import type { EventSpec } from '../connection/register-event.js';

/** `task:move` (docs/tasks.md): the same domain function as `POST /api/v1/tasks/:id/state`. */
export function taskHandlers(deps: { tasks: TasksService }): Record<'task:move', EventSpec> {
  return {
    'task:move': {
      async handle({ principal, payload }) {
        const { taskId, ...input } = payload;
        return { task: await deps.tasks.move(principal, taskId, input) };
      },
    },
  };
}
