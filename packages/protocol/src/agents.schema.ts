import { IdString, Nullable, RoleSchema, Timestamp } from './common.schema.js';
import { Type, Text } from './text.js';

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

/** The Agent object (docs/protocol.md, Agents and tokens; `disabledAt`: Disabled agents). */
export const AgentSchema = Type.Object(
  {
    id: IdString(),
    name: Type.String({ pattern: AGENT_NAME_PATTERN }),
    displayName: Type.String({ minLength: 1, maxLength: 128 }),
    role: RoleSchema,
    createdAt: Timestamp(),
    disabledAt: Nullable(Timestamp('When the agent was disabled; null while it is active')),
  },
  { title: 'Agent' },
);

export const AgentList = Type.Array(AgentSchema, { title: 'AgentList' });
