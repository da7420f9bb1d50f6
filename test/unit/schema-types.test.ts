import type { Static } from '@sinclair/typebox';
import { describe, expectTypeOf, it } from 'vitest';
import type {
  AgentSchema, IssuedTokenSchema, SessionSchema, DirectorySchema, HistoryPageSchema, MessageSchema, SyncPageSchema,
  InboxPageSchema, SearchPageSchema, MembershipSchema, ReadCursorSchema, RoomMembersSchema, RoomSchema, ChannelSchema,
  PostPageSchema, PostSchema, ReactionListSchema, ThreadSchema, ToggleResultSchema, WsMessageSchema,
  CreatedWebhookSchema, DeliverySchema, WebhookSchema, HelloAck, HelloAckSchema, PresenceUpdate, PresenceUpdateSchema,
  WsError, WsErrorSchema, WsMessage,
} from '@agent-messaging/protocol';
import type { ActivityView } from '../../src/core/activity/activity.service.js';
import type { Agent } from '../../src/core/agents/agents.store.js';
import type { IssuedToken } from '../../src/core/auth/tokens.service.js';
import type { Session } from '../../src/core/auth/sessions.service.js';
import type { Directory } from '../../src/core/directory/directory.service.js';
import type { Message } from '../../src/core/messages/message.js';
import type { HistoryPage, SyncPage } from '../../src/core/messages/messages.service.js';
import type { InboxPage } from '../../src/core/inbox/inbox.service.js';
import type { SearchPage } from '../../src/core/search/search.service.js';
import type { RoomListing } from '../../src/core/rooms/read-cursors.service.js';
import type { RoomMember } from '../../src/core/rooms/rooms.service.js';
import type { Membership } from '../../src/core/rooms/rooms.store.js';
import type { ReadCursor } from '../../src/core/rooms/read-cursors.service.js';
import type { Channel, Post, PostPage, ReactionSummary, Thread, ToggleResult } from '../../src/core/social/social.service.js';
import type { CreatedWebhook, Webhook, WebhookDelivery } from '../../src/core/webhooks/webhooks.service.js';

/**
 * The documents (/openapi.json, /asyncapi.json) are generated from the response schemas; the
 * services return their own types. Checked by the compiler (`npm run typecheck`): a field added to
 * one and not the other fails here, so the documents cannot drift from the code.
 */
describe('response schemas and the types the services return', () => {
  it('are the same types', () => {
    expectTypeOf<Static<typeof AgentSchema>>().toEqualTypeOf<Agent>();
    expectTypeOf<Static<typeof IssuedTokenSchema>>().toEqualTypeOf<IssuedToken>();
    expectTypeOf<Static<typeof SessionSchema>>().toEqualTypeOf<Session>();
    expectTypeOf<Static<typeof RoomSchema>>().toEqualTypeOf<{ [K in keyof RoomListing]: RoomListing[K] }>();
    expectTypeOf<Static<typeof ReadCursorSchema>>().toEqualTypeOf<ReadCursor>();
    expectTypeOf<Static<typeof MembershipSchema>>().toEqualTypeOf<Membership>();
    expectTypeOf<Static<typeof RoomMembersSchema>>().toEqualTypeOf<{ members: { [K in keyof RoomMember | 'activity']: K extends keyof RoomMember ? RoomMember[K] : ActivityView | null }[] }>();
    expectTypeOf<Static<typeof MessageSchema>>().toEqualTypeOf<Message>();
    expectTypeOf<Static<typeof HistoryPageSchema>>().toEqualTypeOf<HistoryPage>();
    expectTypeOf<Static<typeof SyncPageSchema>>().toEqualTypeOf<SyncPage>();
    expectTypeOf<Static<typeof InboxPageSchema>>().toEqualTypeOf<InboxPage>();
    expectTypeOf<Static<typeof SearchPageSchema>>().toEqualTypeOf<SearchPage>();
    expectTypeOf<Static<typeof ChannelSchema>>().toEqualTypeOf<Channel>();
    expectTypeOf<Static<typeof PostSchema>>().toEqualTypeOf<Post>();
    expectTypeOf<Static<typeof PostPageSchema>>().toEqualTypeOf<PostPage>();
    expectTypeOf<Static<typeof ThreadSchema>>().toEqualTypeOf<Thread>();
    expectTypeOf<Static<typeof ToggleResultSchema>>().toEqualTypeOf<ToggleResult>();
    // The schema names the three allowed emoji (the database CHECK holds them); the type says string.
    expectTypeOf<Static<typeof ReactionListSchema>['reactions'][number]>().toExtend<ReactionSummary>();
    expectTypeOf<keyof ReactionSummary>().toEqualTypeOf<keyof Static<typeof ReactionListSchema>['reactions'][number]>();
    expectTypeOf<Static<typeof DirectorySchema>>().toEqualTypeOf<Directory>();
    expectTypeOf<Static<typeof WsMessageSchema>>().toEqualTypeOf<WsMessage>();
    expectTypeOf<Static<typeof PresenceUpdateSchema>>().toEqualTypeOf<PresenceUpdate>();
    expectTypeOf<Static<typeof HelloAckSchema>>().toEqualTypeOf<HelloAck>();
    expectTypeOf<Static<typeof WsErrorSchema>>().toEqualTypeOf<WsError>();
    expectTypeOf<Static<typeof WebhookSchema>>().toEqualTypeOf<Webhook>();
    expectTypeOf<Static<typeof CreatedWebhookSchema>>().toEqualTypeOf<{ [K in keyof CreatedWebhook]: CreatedWebhook[K] }>();
    expectTypeOf<Static<typeof DeliverySchema>>().toEqualTypeOf<WebhookDelivery>();
  });
});
