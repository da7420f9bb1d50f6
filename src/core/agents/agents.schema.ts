import { Type, Text } from '../validation.js';

export const AGENT_NAME_PATTERN = '^[a-z0-9][a-z0-9-]{0,63}$';

export const CreateAgentInput = Type.Object(
  {
    // The pattern bounds the length (64), so every bad name gets the message naming the pattern.
    name: Text({ pattern: AGENT_NAME_PATTERN }),
    displayName: Text({ minLength: 1, maxLength: 128 }),
    role: Type.Union([Type.Literal('admin'), Type.Literal('agent')]),
  },
  { additionalProperties: true },
);
