import type { Server as HttpServer } from 'node:http';
import { Server } from 'socket.io';
import type { AppContext } from '../context.js';
import { AppError } from '../errors.js';
import { adapterKey, createRedisAdapter, type AdapterMode } from '../cluster/redis-adapter.js';
import { createConnectionHandler } from './connection/connection.js';
import { connectionCapacity, LOW_CAPACITY } from './connection/connection-capacity.js';
import { safeParser } from './connection/safe-parser.js';
import { toWsError, turnAway } from './connection/ws-errors.js';
import { InFlight } from './drain.js';
import { createRealtimePublisher } from './outbound/fan-out.js';
import type { PresenceTracker } from '../presence/presence-tracker.js';
import { startPositionChecks } from './presence/position-check.js';
import { createPresenceAnnouncer, createSubscriptions } from './presence/room-subscriptions.js';
import {
  membershipFollowers, NAMESPACE, ROOM_PREFIX, roomChannel,
  type AgentsNamespace, type ClientToServerEvents, type InterServerEvents, type ServerToClientEvents, type SocketData,
} from './protocol.js';

/**
 * Socket.IO limits, set deliberately:
 * - one frame at most 256 KiB: the largest valid `message:send` (16384 code points of 4-byte UTF-8,
 *   or of characters JSON escapes as 6 bytes, plus 100 mentions) fits with room to spare; a
 *   multi-MiB frame is refused by the WebSocket layer (close 1009) before it is buffered or parsed.
 * - a ping every 25 s, 20 s to answer: a dead peer is noticed within 45 s, and the traffic keeps
 *   idle connections alive through proxies that cut them after 60 s.
 * - 10 s to join a namespace after the transport connected, instead of 45 s.
 * - no per-message compression: it costs CPU and memory per connection for small JSON frames.
 */
export const WS_MAX_FRAME_BYTES = 256 * 1024;
export const WS_PING_INTERVAL_MS = 25_000;
export const WS_PING_TIMEOUT_MS = 20_000;
export const WS_CONNECT_TIMEOUT_MS = 10_000;

/** Shutdown budget (main.ts gives the whole close 15 s). */
const DRAIN_TIMEOUT_MS = 5_000;
const DISCONNECT_TIMEOUT_MS = 3_000;
/**
 * After the bus or the adapter's subscriber is back, the position check waits this long: Redis then
 * has the re-subscriptions, so a `lastSeq` it reads covers every broadcast this node did not get.
 */
const RESUME_CHECK_DELAY_MS = 1_000;

export interface RealtimeOptions {
  /** Prefix of the Redis adapter's channels; `<REDIS_KEY_PREFIX>socket.io` by default. */
  adapterKey?: string;
}

export interface Realtime {
  io: Server<ClientToServerEvents, ServerToClientEvents, InterServerEvents, SocketData>;
  namespace: AgentsNamespace;
  /** How the Redis adapter fans out (docs/scale-out.md, "Fan-out"); null on one node without Redis. */
  adapterMode: AdapterMode | null;
  /** Stops accepting sockets and events, lets in-flight events finish, then closes the sockets. */
  close(): Promise<void>;
}

/**
 * The WebSocket interface (docs/protocol.md, WebSocket) on the HTTP server of the REST API: namespace `/agents`,
 * in-memory adapter on one node, the Redis adapter when REDIS_URL is set.
 */
export async function attachRealtime(ctx: AppContext, httpServer: HttpServer, options: RealtimeOptions = {}): Promise<Realtime> {
  const { config, logger } = ctx;
  const log = logger.child({ component: 'realtime' });
  const presence: PresenceTracker = ctx.presence;
  const allowedOrigins = config.ws.allowedOrigins;
  let closing = false;

  const mode = config.redisAdapterMode === 'auto' ? {} : { mode: config.redisAdapterMode };
  const redisAdapter = ctx.redis ? await createRedisAdapter(ctx.redis, options.adapterKey ?? adapterKey(config.redisKeyPrefix), log, mode) : null;

  const io = new Server<ClientToServerEvents, ServerToClientEvents, InterServerEvents, SocketData>(httpServer, {
    serveClient: false,
    transports: ['polling', 'websocket'],
    maxHttpBufferSize: WS_MAX_FRAME_BYTES,
    pingInterval: WS_PING_INTERVAL_MS,
    pingTimeout: WS_PING_TIMEOUT_MS,
    connectTimeout: WS_CONNECT_TIMEOUT_MS,
    perMessageDeflate: false,
    parser: safeParser, // refuses acknowledgement ids beyond 2^53 (connection/safe-parser.ts)
    ...(redisAdapter ? { adapter: redisAdapter.adapter } : {}),
    allowRequest(req, callback) {
      if (closing) return callback('Server is shutting down', false);
      // Browsers send Origin; other clients do not and are not affected (WS_ALLOWED_ORIGINS).
      const origin = req.headers.origin;
      if (allowedOrigins !== null && origin !== undefined && !allowedOrigins.includes(origin)) {
        return callback('Origin not allowed', false);
      }
      callback(null, true);
    },
  });

  // The service lives on /agents only; say so to a client that connected to the main namespace.
  io.of('/').on('connection', (socket) => {
    turnAway(socket, toWsError(new AppError('VALIDATION_ERROR', `Unknown namespace "/"; connect to ${NAMESPACE}`), log, 'connect'));
  });

  const nsp: AgentsNamespace = io.of(NAMESPACE);
  const roomsSubscribed = (): Promise<void> => redisAdapter?.subscribed() ?? Promise.resolve();
  const inFlight = new InFlight();
  /** Membership removals this node's sockets followed: a handshake's setup reads its rooms again after one (connection.ts). */
  let removalsFollowed = 0;
  // Each node's part of a membership change: the agents' sockets here join or leave the room's
  // channel. The bridge applies it on every node before the change's request answers; the
  // adapter's own socketsJoin/socketsLeave would not wait for the other nodes, hence `local`.
  const announceRoom = async (roomId: string, agentIds: readonly string[]): Promise<void> => {
    try {
      const room = await ctx.rooms.get(roomId);
      const { [roomId]: lastSeq = room.lastSeq } = await ctx.rooms.lastSeqs([roomId]);
      for (const agentId of agentIds) nsp.local.in(membershipFollowers(agentId, roomId)).emit('room:added', { room: { ...room, lastSeq } });
    } catch (err) {
      log.warn({ err, roomId }, 'room:added not sent');
    }
  };
  ctx.bridge.attachSockets({
    async joinRoom(roomId, agentIds) {
      for (const agentId of agentIds) nsp.local.in(membershipFollowers(agentId, roomId)).socketsJoin(roomChannel(roomId));
      // A first member here makes this node subscribe the room's channel: the change answers once
      // that is active, so a message sent after it reaches these sockets.
      await roomsSubscribed();
      // The sockets hear of the room once they are subscribed (docs/websocket.md, room:added); the
      // room is read after the join, so lastSeq covers every message they will not get live.
      void announceRoom(roomId, agentIds);
    },
    leaveRoom(roomId, agentIds) {
      removalsFollowed++;
      for (const agentId of agentIds) {
        nsp.local.in(membershipFollowers(agentId, roomId)).emit('room:removed', { roomId });
        nsp.local.in(membershipFollowers(agentId, roomId)).socketsLeave(roomChannel(roomId));
      }
    },
  });
  const announcer = createPresenceAnnouncer(nsp);
  const subscriptions = createSubscriptions(presence, announcer, (agentId, roomIds) => ctx.activity.gone(agentId, roomIds), roomsSubscribed);
  const capacity = connectionCapacity();
  if (capacity.maxConnections !== null) ctx.metrics.connectionCapacity.set(capacity.maxConnections);
  const capacityLog = { openFileLimit: capacity.openFileLimit, maxConnections: capacity.maxConnections };
  if (capacity.maxConnections === null) log.info(capacityLog, 'open-file limit unknown: WebSocket connections are not capped by it');
  else if (capacity.maxConnections < LOW_CAPACITY) log.warn(capacityLog, `open-file limit allows only ${capacity.maxConnections} WebSocket connections; raise it (ulimit -n, LimitNOFILE) to hold more`);
  else log.info(capacityLog, `open-file limit allows ${capacity.maxConnections} WebSocket connections`);
  const connections = createConnectionHandler({
    config: config.ws,
    logger: log,
    metrics: ctx.metrics,
    limits: ctx.limits,
    auth: ctx,
    rooms: ctx.rooms,
    readCursors: ctx.readCursors,
    messages: ctx.messages,
    streams: ctx.streams,
    activity: ctx.activity,
    tasks: ctx.tasks,
    acks: ctx.acks,
    subscriptions,
    inFlight,
    isClosing: () => closing,
    maxConnections: capacity.maxConnections,
    removalsFollowed: () => removalsFollowed,
  });
  nsp.use(connections.authenticate);
  nsp.on('connection', connections.connected);
  ctx.events.attach(createRealtimePublisher(nsp, subscriptions, announcer, log));
  // Broadcasts lost while this node's bus or adapter was cut off are announced at once; the periodic
  // run bounds every other blind spot (docs/catch-up.md "Position checks").
  const positions = startPositionChecks({ nsp, rooms: ctx.rooms, subscriptions, logger: log, intervalMs: config.ws.positionCheckIntervalMs });
  const checkSoon = (reason: string) => (): void => {
    if (!closing) setTimeout(() => void positions.checkNow(reason), RESUME_CHECK_DELAY_MS).unref();
  };
  ctx.bus.onResume(checkSoon('cluster bus resumed'));
  redisAdapter?.onResume(checkSoon('socket.io adapter resumed'));
  ctx.database.onUnavailable?.(() => {
    if (!closing) positions.databaseInterrupted();
  });
  // A shared tracker's own work: heartbeat, sweeping dead nodes, re-registering after Redis lost data.
  presence.start({
    localSockets: () => [...nsp.sockets.values()]
      .filter((s) => s.connected && s.data.principal !== undefined)
      .map((s) => ({
        agentId: s.data.principal.agentId,
        socketId: s.id,
        roomIds: [...s.rooms].filter((r) => r.startsWith(ROOM_PREFIX)).map((r) => r.slice(ROOM_PREFIX.length)),
      })),
    announce: (agentId, roomId, status) => announcer.announce(roomId, agentId, status),
  });

  let closed: Promise<void> | undefined;
  return {
    io,
    namespace: nsp,
    adapterMode: redisAdapter?.mode ?? null,
    close() {
      closed ??= (async () => {
        closing = true;
        positions.stop();
        if (!(await inFlight.idle(DRAIN_TIMEOUT_MS))) log.warn('websocket events still running after the drain timeout');
        // Closing the transport (not a Socket.IO disconnect) lets clients reconnect on their own, to
        // another node or to this one once it is back. Queued packets (acks) are flushed first.
        const sockets = [...nsp.sockets.values()];
        const gone = Promise.all(sockets.map((s) => (s.connected ? new Promise<void>((resolve) => s.once('disconnect', () => resolve())) : Promise.resolve())));
        for (const socket of sockets) socket.conn.close();
        await Promise.race([gone, new Promise<void>((resolve) => setTimeout(resolve, DISCONNECT_TIMEOUT_MS).unref())]);
        io.engine.close(); // whatever is left: dead peers, transports that never joined a namespace
        await inFlight.idle(DISCONNECT_TIMEOUT_MS); // presence updates of the disconnects
        await presence.stop();
        announcer.close();
        await Promise.allSettled([io.of('/'), nsp].map((n) => n.adapter.close()));
        await redisAdapter?.close();
      })();
      return closed;
    },
  };
}

