import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { ClusterBus } from './cluster/bus.js';
import { createEventBridge, type EventBridge } from './cluster/event-bridge.js';
import { createMemoryBus } from './cluster/memory-bus.js';
import { createRedisBus } from './cluster/redis-bus.js';
import type { Config } from './config/config.js';
import { createAgentsService, type AgentsService } from './core/agents/agents.service.js';
import { createAuditService, type AuditService } from './core/audit/audit.service.js';
import { createApiTokenAuth, type ApiTokenAuth } from './core/auth/api-token-auth.js';
import { createAuthz, type Authz } from './core/authz/authz.js';
import { createJwtCodec } from './core/auth/jwt.js';
import { resolveJwtSecret } from './core/auth/jwt-secret.js';
import { createSessionAuth, type SessionAuth } from './core/auth/session-auth.js';
import { createSessionsService, type SessionsService } from './core/auth/sessions.service.js';
import { createTokensService, type TokensService } from './core/auth/tokens.service.js';
import { LiveOAuthRequests } from './core/oauth/live-requests.js';
import { createOAuthService, type OAuthService } from './core/oauth/oauth.service.js';
import { createDirectoryService, type DirectoryService } from './core/directory/directory.service.js';
import { PublisherRelay } from './core/events.js';
import { createFilesService, type FilesService } from './core/files/files.service.js';
import { createActivityService, type ActivityService } from './core/activity/activity.service.js';
import { createInboxService, type InboxService } from './core/inbox/inbox.service.js';
import { InboxWaiters } from './core/inbox/inbox-waiters.js';
import { TaskWaiters } from './core/tasks/task-waiters.js';
import { createTasksService, type TasksService } from './core/tasks/tasks.service.js';
import { createRetentionService, type RetentionService } from './core/retention/retention.service.js';
import { createLeasesService, type LeasesService } from './core/leases/leases.service.js';
import { createMessagesService, type MessagesService } from './core/messages/messages.service.js';
import { createStreamsService, type StreamsService } from './core/messages/streams.js';
import { createAcksService, type AcksService } from './core/messages/acks.service.js';
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
import { createMemoryPresence, type PresenceTracker } from './presence/presence-tracker.js';
import { createRedisPresence } from './presence/redis-presence.js';
import { openDatabase, type Database } from './store/database.js';
import { connectRedis } from './cluster/redis-client.js';

/**
 * The composition root: everything is built here, once, from the configuration. Tests pass
 * overrides. No module reaches for a global.
 */
export interface AppContext {
  config: Config;
  logger: Logger;
  database: Database;
  redis: Redis | null;
  /** Carries what crosses between nodes: in-process on one node, Redis pub/sub on several. Only `bridge` uses it. */
  bus: ClusterBus;
  /**
   * The one road from domain events to the other nodes (cluster/event-bridge.ts): attached to
   * `events`; the real-time layer attaches its socket moves to it.
   */
  bridge: EventBridge;
  metrics: Metrics;
  /** Every limit (rate limits, caps, gates), built once by src/limits/. */
  limits: Limits;
  authz: Authz;
  /** Fan-out after commit: metrics now, the real-time layer once it is attached. */
  events: PublisherRelay;
  activity: ActivityService;
  agents: AgentsService;
  audit: AuditService;
  tokens: TokensService;
  sessions: SessionsService;
  /** The one acceptance of session JWTs, at every entry point: the JWT, its agent, then (strict mode) its API token's state. */
  sessionAuth: SessionAuth;
  /** API tokens as bearers (`/mcp`): verified once, then checked on every request. */
  apiTokenAuth: ApiTokenAuth;
  /** OAuth 2.1 for MCP clients (docs/oauth.md): grants, and access tokens at `/mcp`. */
  oauth: OAuthService;
  /** This node's OAuth requests in flight at `/mcp`, closed when their grant ends. */
  liveOAuth: LiveOAuthRequests;
  /** The origin clients use (PUBLIC_URL, or the address listened on: set by app.ts once listening). */
  publicUrl: { value: string };
  rooms: RoomsService;
  messages: MessagesService;
  /** Streamed messages (docs/streaming.md): appends, ends, the idle sweep (started by app.ts). */
  streams: StreamsService;
  /** Acknowledgements of messages that ask for them (docs/acknowledgements.md). */
  acks: AcksService;
  /** Read cursors, unread counts and the room listings that show them. */
  readCursors: ReadCursorsService;
  inbox: InboxService;
  /** Held inbox requests, woken by the event bridge for messages committed here and on other nodes. */
  inboxWaiters: InboxWaiters;
  /** Tasks and approvals (docs/tasks.md), and their held requests, woken by the event bridge on every node. */
  tasks: TasksService;
  leases: LeasesService;
  taskWaiters: TaskWaiters;
  search: SearchService;
  social: SocialService;
  directory: DirectoryService;
  /** Who is online: kept by the real-time layer from live sockets, read by the directory. */
  presence: PresenceTracker;
  webhooks: WebhooksService;
  /** Attempts the stored webhook deliveries; started by app.ts once the server listens. */
  webhookWorker: DeliveryWorker;
  /** Uploads, downloads and the clean-up of files (its timer started by app.ts). */
  files: FilesService;
  /** The retention sweep (its timer started by app.ts) and room exports (docs/retention.md). */
  retention: RetentionService;
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

/** TEST ONLY (AMS_TEST_PAUSE_TASK_MOVE): logs that a move's transaction reached its pause, and never lets it go on. */
const pauseForCrashTest = (logger: Logger) => (): Promise<void> => {
  logger.warn({ testPause: 'task-move' }, 'test pause: a task move waits inside its transaction until the process is killed');
  return new Promise<void>(() => undefined);
};

export async function createContext(config: Config, logger: Logger, overrides: ContextOverrides = {}): Promise<AppContext> {
  const database = overrides.database ?? (await openDatabase(config.database, logger));
  const { db } = database;
  // Fail-fast client settings and the startup wait live in cluster/redis-client.ts.
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
  const membershipCache = new MembershipCache(redis ? { ttlMs: MEMBERSHIP_TTL_MS_MULTI_NODE, trusted: () => bus.live } : {});
  const presence = overrides.presence
    ?? (redis ? createRedisPresence(redis, { keyPrefix: config.redisKeyPrefix, ttlSeconds: config.presenceTtlSeconds, logger }) : createMemoryPresence());
  const rooms = createRoomsService({ db, authz, events, membershipCache, presence });
  // Activity is memory only; other nodes' updates reach it through the bridge (docs/protocol.md, Activity).
  const activity = createActivityService({ authz, rooms, events });
  const sessions = createSessionsService({ db, jwt, gate: limits.exchangeGate });
  const sessionAuth = createSessionAuth({ db, authz, jwt, jwtTtlSeconds: config.jwtTtlSeconds });
  const apiTokenAuth = createApiTokenAuth({ db, sessions, sessionAuth });
  // Other nodes' commits reach this node only while it holds an inbox waiter (docs/scale-out.md).
  const inboxWaiters = new InboxWaiters({ follow: () => bus.follow('messages.committed'), unfollow: () => bus.unfollow('messages.committed') });
  const liveOAuth = new LiveOAuthRequests();
  const taskWaiters = new TaskWaiters();

  // Webhooks: the outbox is written in the send's transaction; `offline` reads the cluster-wide
  // presence at commit. The worker is woken after a commit that recorded deliveries here.
  const webhookOutbox = createWebhookOutbox({ db, presence, crossNodeLive: () => bus.live });
  // What the domain's events change on every node (caches, held inbox requests, sockets), this
  // one included, before (or, for hints, without) waiting: before the real-time fan-out, which
  // is attached later and finds the sockets moved.
  const bridge = createEventBridge({
    bus,
    node: { membershipCache, sessionAuth, apiTokenAuth, webhookOutbox, inboxWaiters, taskWaiters, activity, liveOAuth },
    otherNodes: redis !== null,
  });
  events.attach(bridge);
  const webhookWorker = createDeliveryWorker({
    db,
    retryScheduleSeconds: config.webhooks.retryScheduleSeconds,
    allowPrivateTargets: config.webhooks.allowPrivateTargets,
    onOutcome: (outcome) => metrics.webhookDeliveries.inc({ outcome }),
    warn: (detail, message) => logger.warn(detail, message),
  });
  events.attach({
    publish(event) {
      if ((event.type === 'message.created' || event.type === 'message.updated' || event.type === 'message.deleted' || event.type === 'message.acked') && webhookOutbox.takeRecorded()) webhookWorker.kick();
    },
  });

  events.attach(activity.listener);
  const streams = createStreamsService({
    db, authz, rooms, events, presence, outbox: webhookOutbox, idleSeconds: config.streamIdleSeconds,
    onError: (what, err) => logger.warn({ err: { message: err instanceof Error ? err.message : String(err) } }, `${what} failed`),
  });
  const messages = createMessagesService({ db, authz, rooms, events, outbox: webhookOutbox, streams });
  const ctx: AppContext = {
    config,
    logger,
    database,
    redis,
    bus,
    bridge,
    metrics,
    limits,
    authz,
    events,
    agents: createAgentsService({ db, authz, events }),
    audit: createAuditService({ db, authz }),
    tokens: createTokensService({ db, authz, events }),
    sessions,
    sessionAuth,
    apiTokenAuth,
    oauth: createOAuthService({ db, events, apiTokenAuth }),
    liveOAuth,
    publicUrl: { value: config.publicUrl ?? `http://${config.host}:${config.port}` },
    rooms,
    activity,
    messages,
    streams,
    acks: createAcksService({ db, authz, rooms, events, outbox: webhookOutbox }),
    tasks: createTasksService({
      db, authz, rooms, messages, events, waiters: taskWaiters, waitSlots: limits.waits,
      ...(config.testPauseTaskMove ? { pauseMove: pauseForCrashTest(logger) } : {}),
      ...(config.testMinLeaseSeconds === undefined ? {} : { minLeaseSeconds: config.testMinLeaseSeconds }),
    }),
    taskWaiters,
    leases: createLeasesService({
      db, authz, rooms, events,
      ...(config.testMinLeaseSeconds === undefined ? {} : { minTtlSeconds: config.testMinLeaseSeconds }),
    }),
    readCursors: createReadCursorsService({ db, authz, rooms }),
    inbox: createInboxService({ db, authz, rooms, waiters: inboxWaiters, waitSlots: limits.waits }),
    inboxWaiters,
    search: createSearchService({ db, authz, rooms }),
    social: createSocialService({ db, authz }),
    directory: createDirectoryService({ db, authz, companyId: config.companyId, presence }),
    presence,
    webhooks: createWebhooksService({ db, authz, events, allowPrivateTargets: config.webhooks.allowPrivateTargets }),
    webhookWorker,
    files: createFilesService({
      db,
      authz,
      ...config.files,
      warn: (detail, message) => logger.warn(detail, message),
    }),
    retention: createRetentionService({ db, authz, rooms, defaultDays: config.retention.defaultDays, sweepIntervalMs: config.retention.sweepIntervalMs }),
    async close() {
      inboxWaiters.close();
      taskWaiters.close();
      await ctx.tasks.stopExpiry();
      await streams.close();
      await ctx.leases.stopExpiry();
      activity.close();
      await webhookWorker.stop();
      await ctx.files.stop();
      await ctx.retention.stop();
      await bus.close();
      await database.close();
      if (redis) redis.disconnect();
    },
  };
  return ctx;
}
