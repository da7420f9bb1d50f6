import { Type, Text, Uuid } from '../validation.js';

export const MESSAGE_BODY_MAX = 16_384;
export const HISTORY_LIMIT_DEFAULT = 50;
export const HISTORY_LIMIT_MAX = 100;
export const HISTORY_LIMITS = { default: HISTORY_LIMIT_DEFAULT, max: HISTORY_LIMIT_MAX };

/** The message fields of a send, shared by REST (`POST .../messages`) and WebSocket (`message:send`). */
export const SendMessageInput = Type.Object(
  {
    body: Text({ minLength: 1, maxLength: MESSAGE_BODY_MAX }),
    mentions: Type.Optional(Type.Array(Uuid(), { maxItems: 100 })),
    replyTo: Type.Optional(Uuid()),
    clientMsgId: Type.Optional(Text({ minLength: 1, maxLength: 64 })),
  },
  { additionalProperties: true },
);
