import { Type } from '../../core/validation.js';
import { ROOM, args, defineTool } from './define.js';

/** Acknowledgements (docs/acknowledgements.md): the same service as REST `POST .../messages/:messageId/ack`. */
export const ACK_TOOLS = {
  ack_message: defineTool({
    title: 'Acknowledge a message',
    description: 'Acknowledges a message that asks you for an acknowledgement (it shows "acknowledgement asked"; fetch_inbox with filter "ack" lists those awaiting yours). Its sender learns that you did. Returns ackedAt; acknowledging again returns the same ackedAt. A message that does not ask you is a CONFLICT.',
    input: args({
      room: ROOM,
      messageId: Type.String({ minLength: 1, maxLength: 64, description: 'The id of the message.' }),
    }),
    fields: { roomId: 'room' },
    readOnly: false,
    async run({ room, messageId }, { ctx, principal }) {
      const roomId = await ctx.rooms.resolveId(room, 'room');
      const { ackedAt } = await ctx.acks.ack(principal, roomId, messageId);
      return { data: { ackedAt }, text: `Acknowledged message ${messageId} at ${ackedAt}.` };
    },
  }),
};
