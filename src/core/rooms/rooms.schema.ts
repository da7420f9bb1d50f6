import { Type, Text, Uuid } from '../validation.js';

export const ROOM_SLUG_PATTERN = '^[a-z0-9-]{1,64}$';

export const CreateRoomInput = Type.Object(
  {
    // The pattern bounds the length (64), so every bad slug gets the message naming the pattern.
    slug: Text({ pattern: ROOM_SLUG_PATTERN }),
    name: Text({ minLength: 1, maxLength: 128 }),
    members: Type.Optional(Type.Array(Uuid(), { maxItems: 1000 })),
  },
  { additionalProperties: true },
);

export const AddMemberInput = Type.Object({ agentId: Uuid() }, { additionalProperties: true });
