import type { Static } from '@sinclair/typebox';
import { IdString, Nullable, Timestamp } from './common.schema.js';
import { Type, Text } from './text.js';

/** docs/protocol.md, Activity: what an agent shows it is doing in a room. */
export const ACTIVITY_STATES = ['typing', 'working', 'idle'] as const;
export type ActivityState = (typeof ACTIVITY_STATES)[number];
export const ACTIVITY_TEXT_MAX = 80;
/** How long a state lasts unless set again; `idle` does not expire. */
export const ACTIVITY_TTL_MS = { typing: 8_000, working: 120_000 } as const;

const ActivityStateSchema = Type.Union([Type.Literal('typing'), Type.Literal('working'), Type.Literal('idle')]);

/** `POST /api/v1/rooms/:id/activity`, `activity:set` (which adds `roomId`), MCP `set_activity`. */
export const SetActivityInput = Type.Object(
  {
    state: ActivityStateSchema,
    text: Type.Optional(Text({ maxLength: ACTIVITY_TEXT_MAX })),
  },
  { additionalProperties: true },
);

/** A member's current activity (`GET /api/v1/rooms/:id/members` items' `activity`). */
export const Activity = Type.Object({
  state: ActivityStateSchema,
  /** "" when none. */
  text: Type.String(),
  /** null for `idle`. */
  expiresAt: Nullable(Timestamp()),
});

/** `activity:update`, to the room's members' sockets. */
export const ActivityUpdate = Type.Object({
  roomId: IdString(),
  agentId: IdString(),
  state: ActivityStateSchema,
  text: Type.String(),
  expiresAt: Nullable(Timestamp()),
});

export type ActivityUpdatePayload = Static<typeof ActivityUpdate>;
export type ActivityView = Static<typeof Activity>;
