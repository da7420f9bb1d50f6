import type { AcksService } from '../../core/messages/acks.service.js';
import type { EventSpec } from '../connection/register-event.js';

/** `message:ack` (docs/acknowledgements.md): the same domain function as `POST .../messages/:messageId/ack`. */
export function ackHandlers(deps: { acks: AcksService }): Record<'message:ack', EventSpec> {
  return {
    'message:ack': {
      async handle({ principal, payload }) {
        return deps.acks.ack(principal, payload.roomId, payload.messageId);
      },
    },
  };
}
