import { Type, Text, Uuid } from '../validation.js';

export const ROOM_SLUG_PATTERN = '^[a-z0-9-]{1,64}$';

export const CreateRoomInput = Type.Object(
  {
    slug: Text({ pattern: ROOM_SLUG_PATTERN, maxLength: 64 }),
    name: Text({ minLength: 1, maxLength: 128 }),
    members: Type.Optional(Type.Array(Uuid(), { maxItems: 1000 })),
  },
  { additionalProperties: true },
);

export const AddMemberInput = Type.Object({ agentId: Uuid() }, { additionalProperties: true });
