import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { ClusterBus } from './cluster/bus.js';
import { createMemoryBus } from './cluster/memory-bus.js';
import { createRedisBus } from './cluster/redis-bus.js';
import type { Config } from './config/config.js';
import { createAgentsService, type AgentsService } from './core/agents/agents.service.js';
import { createApiTokenAuth, type ApiTokenAuth } from './core/auth/api-token-auth.js';
import { createAuthz, type Authz } from './core/auth/authz.js';
import { createJwtCodec } from './core/auth/jwt.js';
import { resolveJwtSecret } from './core/auth/jwt-secret.js';
import { createSessionAuth, type SessionAuth } from './core/auth/session-auth.js';
import { createSessionsService, type SessionsService } from './core/auth/sessions.service.js';
import { createTokensService, type TokensService } from './core/auth/tokens.service.js';
import { createDirectoryService, type DirectoryService } from './core/directory/directory.service.js';
import { PublisherRelay } from './core/events.js';
import { createInboxService, type InboxService } from './core/inbox/inbox.service.js';
import { crossNodeWakePublisher, InboxWaiters, inboxWakePublisher } from './core/inbox/inbox-waiters.js';
import { createMessagesService, type MessagesService } from './core/messages/messages.service.js';
import { createReadCursorsService, type ReadCursorsService } from './core/rooms/read-cursors.service.js';
import { MembershipCache } from './core/rooms/membership-cache.js';
import { createRoomsService, type RoomsService } from './core/rooms/rooms.service.js';
import { createSearchService, type SearchService } from './core/search/search.service.js';
import { createSocialService, type SocialService } from './core/social/social.service.js';
import { createDeliveryWorker, type DeliveryWorker } from './core/webhooks/delivery-worker.js';
import { createWebhookOutbox } from './core/webhooks/webhook-outbox.js';
import { createWebhooksService, type WebhooksService } from './core/webhooks/webhooks.service.js';
import { createLimits, type Limits } from './limits/index.js';
import { createMetrics, type Metrics } from './ops/metrics.js';
import { createMemoryPresence, type PresenceTracker } from './realtime/presence/presence-tracker.js';
import { createRedisPresence } from './realtime/presence/redis-presence.js';
import { openDatabase, type Database } from './store/database.js';
import { connectRedis } from './store/redis.js';

/**
 * The composition root: everything is built here, once, from the configuration. Tests pass
 * overrides. No module reaches for a global.
 */
export interface AppContext {
  config: Config;
  logger: Logger;
  database: Database;
  redis: Redis | null;
  /** What crosses between nodes (membership changes, token revocations): in-process on one node, Redis pub/sub on several. */
  bus: ClusterBus;
  metrics: Metrics;
  /** Every limit (rate limits, caps, gates), built once by src/limits/. */
  limits: Limits;
  authz: Authz;
  /** Fan-out after commit: metrics now, the real-time layer once it is attached. */
  events: PublisherRelay;
  agents: AgentsService;
  tokens: TokensService;
  sessions: SessionsService;
  /** The one acceptance of session JWTs, at every entry point: the JWT, its agent, then (strict mode) its API token's state. */
  sessionAuth: SessionAuth;
  /** API tokens as bearers (`/mcp`): verified once, then checked on every request. */
  apiTokenAuth: ApiTokenAuth;
  rooms: RoomsService;
  messages: MessagesService;
  /** Read cursors, unread counts and the room listings that show them. */
  readCursors: ReadCursorsService;
  inbox: InboxService;
  /**
   * Held inbox requests. Its `wake(roomId, senderId)` is fed by this node's message.created events;
   * a cluster bus subscriber calls it for messages committed on other nodes.
   */
  inboxWaiters: InboxWaiters;
  search: SearchService;
  social: SocialService;
  directory: DirectoryService;
  /** Who is online: kept by the real-time layer from live sockets, read by the directory. */
  presence: PresenceTracker;
  webhooks: WebhooksService;
  /** Attempts the stored webhook deliveries; started by app.ts once the server listens. */
  webhookWorker: DeliveryWorker;
  close(): Promise<void>;
}

export interface ContextOverrides {
  database?: Database;
  limits?: Limits;
  /** By default shared through Redis when REDIS_URL is set, in memory otherwise. */
  presence?: PresenceTracker;
  /** Channel prefix of the Socket.IO Redis adapter (tests isolate themselves with a unique one). */
  realtimeAdapterKey?: string;
}

const MEMBERSHIP_TTL_MS_MULTI_NODE = 5000;

export async function createContext(config: Config, logger: Logger, overrides: ContextOverrides = {}): Promise<AppContext> {
  const database = overrides.database ?? (await openDatabase(config.database, logger));
  const { db } = database;
  // Fail-fast client settings and the startup wait live in store/redis.ts.
  const redis = config.redisUrl ? await connectRedis(config.redisUrl, logger) : null;

  const metrics = createMetrics();
  const limits = overrides.limits ?? createLimits(config, redis);
  const events = new PublisherRelay();
  events.attach(metrics.publisher);
  const authz = createAuthz(config.authzMode);
  const jwt = createJwtCodec(await resolveJwtSecret(db, config.jwtSecret), config.jwtTtlSeconds);
  const bus = redis ? await createRedisBus(redis, { keyPrefix: config.redisKeyPrefix, logger }) : createMemoryBus(logger);
  // Membership checks from memory; with several nodes, removals travel through the bus and entries
  // expire after a few seconds in case a message was lost (see membership-cache.ts).
  const membershipCache = new MembershipCache(redis ? { ttlMs: MEMBERSHIP_TTL_MS_MULTI_NODE } : {});
  const presence = overrides.presence
    ?? (redis ? createRedisPresence(redis, { keyPrefix: config.redisKeyPrefix, ttlSeconds: config.presenceTtlSeconds, logger }) : createMemoryPresence());
  const rooms = createRoomsService({ db, authz, events, bus, membershipCache, presence });
  const sessions = createSessionsService({ db, jwt, gate: limits.exchangeGate });
  const sessionAuth = createSessionAuth({ db, authz, jwt, jwtTtlSeconds: config.jwtTtlSeconds });
  events.attach(sessionAuth.publisher);
  const apiTokenAuth = createApiTokenAuth({ db, sessions, sessionAuth });
  events.attach(apiTokenAuth.publisher);
  // A revocation reaches every node's caches before the revoking request answers: the API-token
  // cache always, the session cache in strict mode. The same for a disabled (or enabled) agent.
  bus.subscribe('token.revoked', ({ tokenId, sessionsEnded }) => {
    apiTokenAuth.revoked(tokenId);
    if (sessionsEnded !== false) sessionAuth.revoked(tokenId);
  });
  bus.subscribe('agent.changed', ({ agentId }) => sessionAuth.agentChanged(agentId));
  events.attach({
    publish(event) {
      if (event.type === 'token.revoked') return bus.publish('token.revoked', { tokenId: event.tokenId, sessionsEnded: event.sessionsEnded });
      if (event.type === 'agent.disabled' || event.type === 'agent.enabled') return bus.publish('agent.changed', { agentId: event.agentId });
      if (event.type === 'webhook.created') return bus.publish('webhook.created', { agentId: event.agentId });
    },
  });
  // Held inbox requests wake for messages committed here, and (through the bus) on other nodes.
  const inboxWaiters = new InboxWaiters();
  events.attach(inboxWakePublisher(inboxWaiters));
  if (redis) events.attach(crossNodeWakePublisher(bus)); // one node: nobody else to tell
  bus.subscribe('messages.committed', ({ messages }) => {
    for (const { roomId, senderId } of messages) inboxWaiters.wake(roomId, senderId);
  });

  // Webhooks: the outbox is written in the send's transaction; `offline` reads the cluster-wide
  // presence at commit. The worker is woken after a commit that recorded deliveries here.
  const webhookOutbox = createWebhookOutbox({ db, presence, bus });
  const webhookWorker = createDeliveryWorker({
    db,
    retryScheduleSeconds: config.webhooks.retryScheduleSeconds,
    allowPrivateTargets: config.webhooks.allowPrivateTargets,
    onOutcome: (outcome) => metrics.webhookDeliveries.inc({ outcome }),
    warn: (detail, message) => logger.warn(detail, message),
  });
  events.attach({
    publish(event) {
      if (event.type === 'message.created' && webhookOutbox.takeRecorded()) webhookWorker.kick();
    },
  });

  const ctx: AppContext = {
    config,
    logger,
    database,
    redis,
    bus,
    metrics,
    limits,
    authz,
    events,
    agents: createAgentsService({ db, authz, events }),
    tokens: createTokensService({ db, authz, events }),
    sessions,
    sessionAuth,
    apiTokenAuth,
    rooms,
    messages: createMessagesService({ db, authz, rooms, events, outbox: webhookOutbox }),
    readCursors: createReadCursorsService({ db, authz, rooms }),
    inbox: createInboxService({ db, authz, rooms, waiters: inboxWaiters, waitSlots: limits.waits }),
    inboxWaiters,
    search: createSearchService({ db, authz, rooms }),
    social: createSocialService({ db, authz }),
    directory: createDirectoryService({ db, authz, companyId: config.companyId, presence }),
    presence,
    webhooks: createWebhooksService({ db, authz, events, allowPrivateTargets: config.webhooks.allowPrivateTargets }),
    webhookWorker,
    async close() {
      inboxWaiters.close();
      await webhookWorker.stop();
      await bus.close();
      await database.close();
      if (redis) redis.disconnect();
    },
  };
  return ctx;
}
