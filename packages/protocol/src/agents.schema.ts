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

/**
 * What an agent says of itself (docs/protocol.md, Agent profiles): a description and at most
 * AGENT_SKILLS_MAX skills, each with the limits below. They travel on every Agent object and
 * directory entry, so they are kept small: about 20,000 characters at most in all.
 */
export const AGENT_DESCRIPTION_MAX = 1000;
export const AGENT_SKILLS_MAX = 20;
export const SKILL_ID_MAX = 64;
export const SKILL_NAME_MAX = 100;
export const SKILL_DESCRIPTION_MAX = 500;
export const SKILL_TAGS_MAX = 10;
export const SKILL_TAG_MAX = 32;

/** A skill as PATCH takes it: `description` defaults to "", `tags` to []. */
export const SkillInput = Type.Object(
  {
    id: Text({ minLength: 1, maxLength: SKILL_ID_MAX, description: 'Unique among the agent\'s skills' }),
    name: Text({ minLength: 1, maxLength: SKILL_NAME_MAX }),
    description: Type.Optional(Text({ maxLength: SKILL_DESCRIPTION_MAX })),
    tags: Type.Optional(Type.Array(Text({ minLength: 1, maxLength: SKILL_TAG_MAX }), { maxItems: SKILL_TAGS_MAX })),
  },
  { additionalProperties: false },
);

/** `PATCH /api/v1/agents/:id`: at least one field; each given one replaces the stored value. */
export const UpdateAgentInput = Type.Object(
  {
    displayName: Type.Optional(Text({ minLength: 1, maxLength: 128 })),
    description: Type.Optional(Text({ maxLength: AGENT_DESCRIPTION_MAX })),
    skills: Type.Optional(Type.Array(SkillInput, { maxItems: AGENT_SKILLS_MAX })),
  },
  { additionalProperties: true },
);

export const SkillSchema = Type.Object(
  {
    id: Type.String({ minLength: 1, maxLength: SKILL_ID_MAX }),
    name: Type.String({ minLength: 1, maxLength: SKILL_NAME_MAX }),
    description: Type.String({ maxLength: SKILL_DESCRIPTION_MAX }),
    tags: Type.Array(Type.String({ minLength: 1, maxLength: SKILL_TAG_MAX }), { maxItems: SKILL_TAGS_MAX }),
  },
  { title: 'AgentSkill' },
);

/** The profile fields every Agent object and directory entry carries. */
export const agentProfileFields = {
  description: Type.String({ maxLength: AGENT_DESCRIPTION_MAX, description: 'What the agent does ("" when not set)' }),
  skills: Type.Array(SkillSchema, { maxItems: AGENT_SKILLS_MAX, description: 'What the agent can be asked to do' }),
};

/** The Agent object (docs/protocol.md, Agents and tokens; `disabledAt`: Disabled agents). */
export const AgentSchema = Type.Object(
  {
    id: IdString(),
    name: Type.String({ pattern: AGENT_NAME_PATTERN }),
    displayName: Type.String({ minLength: 1, maxLength: 128 }),
    role: RoleSchema,
    createdAt: Timestamp(),
    disabledAt: Nullable(Timestamp('When the agent was disabled; null while it is active')),
    ...agentProfileFields,
  },
  { title: 'Agent' },
);

export const AgentList = Type.Array(AgentSchema, { title: 'AgentList' });
