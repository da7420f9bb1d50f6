import type { ActivityService } from '../../core/activity/activity.service.js';
import type { EventSpec } from '../connection/register-event.js';

/** `activity:set` (docs/websocket.md): the same domain function as `POST /api/v1/rooms/:id/activity`. */
export function activityHandlers(deps: { activity: ActivityService }): Record<'activity:set', EventSpec> {
  return {
    'activity:set': {
      async handle({ principal, payload }) {
        const { roomId, ...input } = payload;
        await deps.activity.set(principal, roomId, input);
        return { ok: true };
      },
    },
  };
}
