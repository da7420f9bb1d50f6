import type { ActivityService } from '../../core/activity/activity.service.js';
import type { TasksService } from '../../core/tasks/tasks.service.js';
import { activityHandlers } from '../handlers/activity.handlers.js';
import { taskHandlers } from '../handlers/tasks.handlers.js';
import type { Logger } from 'pino';
import type { Config } from '../../config/config.js';
import type { MessagesService } from '../../core/messages/messages.service.js';
import type { Authenticators } from '../../core/auth/authenticate.js';
import type { ReadCursorsService } from '../../core/rooms/read-cursors.service.js';
import type { RoomsService } from '../../core/rooms/rooms.service.js';
import type { Metrics } from '../../ops/metrics.js';
import type { Limits } from '../../limits/index.js';
import { AppError } from '../../errors.js';
import type { InFlight } from '../drain.js';
import { messageHandlers } from '../handlers/messages.handlers.js';
import { roomHandlers } from '../handlers/rooms.handlers.js';
import { boundOutgoing } from '../outbound/slow-consumers.js';
import { coalesceWrites } from '../outbound/write-coalescing.js';
import type { Subscriptions } from '../presence/room-subscriptions.js';
import { hasAction } from '../../core/authz/authz.js';
import type { Principal } from '../../core/principal.js';
import {
  agentChannel, noTasksChannel, roomGrantChannel, scopedAgentChannel, scopedTasksChannel, scopedTasksRoomChannel, tokenChannel, type AgentSocket, type ClientEventName, type WsError,
} from '../protocol.js';
import { guardEvents } from './event-guard.js';
import { authenticateHandshake } from './handshake.js';
import { eventRunner, type EventSpec } from './register-event.js';
import { SerialQueue } from './serial-queue.js';
import { socketFields, toWsError, turnAway } from './ws-errors.js';

export interface ConnectionDeps {
  config: Config['ws'];
  logger: Logger;
  metrics: Metrics;
  /** Every limit a connection applies (src/limits/). */
  limits: Limits;
  /** The credential decision (core/auth); the handshake only extracts the JWTs. */
  auth: Authenticators;
  rooms: RoomsService;
  readCursors: ReadCursorsService;
  messages: MessagesService;
  activity: ActivityService;
  tasks: TasksService;
  subscriptions: Subscriptions;
  inFlight: InFlight;
  isClosing(): boolean;
  /** Connections admitted at most (connection-capacity.ts); null: no limit known. */
  maxConnections: number | null;
  /** How many membership removals this node's sockets have followed so far (realtime.ts). */
  removalsFollowed(): number;
}

/**
 * The channels a socket is in for its whole life: its agent's (to end it, and to follow the agent's
 * memberships) and its token's (to end it with the token). A scoped token's socket follows only the
 * memberships its token reaches (protocol.ts, `scopedAgentChannel`).
 */
function lifetimeChannels(principal: Principal): string | string[] {
  const { agentId, tokenId, scope } = principal;
  if (scope === undefined) return tokenId === undefined ? agentChannel(agentId) : [agentChannel(agentId), tokenChannel(tokenId)];
  const channels = [scopedAgentChannel(agentId)];
  if (tokenId !== undefined) channels.push(tokenChannel(tokenId));
  const inAgentChannel = hasAction(principal, 'messages:read') && scope.rooms === undefined;
  if (hasAction(principal, 'messages:read')) {
    if (inAgentChannel) channels.push(agentChannel(agentId));
    else for (const roomId of scope.rooms ?? []) channels.push(roomGrantChannel(agentId, roomId));
  }
  // task:updated as tasks:read and the token's rooms allow (protocol.ts, scopedTasksChannel).
  if (!hasAction(principal, 'tasks:read')) {
    if (inAgentChannel) channels.push(noTasksChannel(agentId));
  } else if (scope.rooms !== undefined) {
    for (const roomId of scope.rooms) channels.push(scopedTasksRoomChannel(agentId, roomId));
  } else if (!inAgentChannel) {
    channels.push(scopedTasksChannel(agentId));
  }
  return channels;
}

export interface ConnectionHandler {
  /** Namespace middleware: authenticates the handshake before the client is told it is connected. */
  authenticate(socket: AgentSocket, next: (err?: Error) => void): void;
  /** The namespace's `connection` listener. */
  connected(socket: AgentSocket): void;
}

/**
 * The `/agents` connection handler. Authentication runs in a namespace middleware (it may read the
 * database: strict mode checks the session's API token), so no client event can arrive before it is
 * decided; its outcome is applied in the `connection` listener, so that a failure reaches the client
 * as an `error` event `AUTH_FAILED` followed by a server disconnect (docs/protocol.md, Connecting), not as a
 * `connect_error`. No other handler is ever registered for such a socket.
 *
 * Event handlers are registered synchronously, before any await, so nothing the client sends right
 * after `connect` is lost; they run in the socket's serial queue behind the setup (auto-join,
 * presence, `agent:hello-ack`) and ahead of the teardown.
 */
export function createConnectionHandler(deps: ConnectionDeps): ConnectionHandler {
  const { logger, metrics, subscriptions } = deps;
  const handlers: Record<ClientEventName, EventSpec> = {
    ...roomHandlers({ rooms: deps.rooms, readCursors: deps.readCursors, subscriptions }),
    ...messageHandlers({ messages: deps.messages }),
    ...activityHandlers({ activity: deps.activity }),
    ...taskHandlers({ tasks: deps.tasks }),
  };
  const guardDeps = { config: deps.config, limits: deps.limits, metrics, logger, isClosing: deps.isClosing, run: eventRunner({ metrics, logger }, handlers) };
  const outgoingBound = { maxBytes: deps.limits.slowConsumerBytes, logger };
  const refused = new WeakMap<AgentSocket, WsError>();
  /** The revocations and agent changes heard before the middleware's fresh read, until `connected`. */
  const changesBeforeRead = new WeakMap<AgentSocket, number>();
  const maxConnections = deps.limits.connectionsPerAgent;

  /**
   * The agent's live connections are counted as the socket registers its presence (over every node
   * when presence is shared): beyond the limit it is refused (nothing joined, sent or announced).
   * Otherwise it joins its rooms, gets `agent:hello-ack`, and the agent is announced online where
   * this is its first socket. The hello's `lastSeqs` are read once the socket is in its rooms: a
   * message numbered above them reaches the socket as `message:new`, so a client that catches up to
   * `lastSeqs` misses nothing.
   */
  const subscribeWithinLimit = async (socket: AgentSocket, roomIds: readonly string[]): Promise<boolean> => {
    const { connections, firstInRooms } = await subscriptions.register(socket, roomIds);
    if (connections > maxConnections || !socket.connected) {
      await subscriptions.withdraw(socket);
      if (socket.connected) {
        metrics.rateLimitExceeded.inc({ transport: 'ws' });
        const tooMany = new AppError('RATE_LIMITED', `Too many connections for this agent (at most ${maxConnections})`);
        turnAway(socket, toWsError(tooMany, logger, 'connect', socket));
      }
      return false;
    }
    await subscriptions.subscribe(socket, roomIds);
    const known = await deps.rooms.lastSeqs(roomIds);
    const lastSeqs: Record<string, number> = {};
    for (const roomId of roomIds) lastSeqs[roomId] = known[roomId] ?? 0;
    socket.emit('agent:hello-ack', { agentId: socket.data.principal.agentId, rooms: [...roomIds], lastSeqs });
    socket.data.subscribed = true; // from now on the position check keeps its rooms right (position-check.ts)
    socket.data.toldPositions = lastSeqs;
    subscriptions.announceOnline(socket, firstInRooms);
    return true;
  };

  // Admitted sockets of this handler, until their disconnect: what the descriptor limit bounds.
  let admitted = 0;

  const authenticate: ConnectionHandler['authenticate'] = (socket, next) => {
    if (deps.isClosing()) return next(); // refused in `connected`
    changesBeforeRead.set(socket, deps.auth.sessionAuth.changesHeard());
    authenticateHandshake(deps.auth, socket.handshake).then(
      (principal) => {
        socket.data.principal = principal;
        next();
      },
      (err: unknown) => {
        refused.set(socket, toWsError(err, logger, 'connect'));
        next();
      },
    );
  };

  const connected = (socket: AgentSocket): void => {
    if (deps.isClosing()) return turnAway(socket, toWsError(new AppError('UNAVAILABLE', 'Server is shutting down; reconnect shortly'), logger, 'connect'));
    const failure = refused.get(socket);
    if (failure !== undefined || socket.data.principal === undefined) {
      return turnAway(socket, failure ?? toWsError(new AppError('UNAUTHENTICATED', 'Authentication failed'), logger, 'connect'));
    }
    if (deps.maxConnections !== null && admitted >= deps.maxConnections) {
      // Refused before the process runs out of descriptors (then accept() would fail for everyone);
      // the disconnect closes this socket's descriptor at once.
      metrics.connectionsRefused.inc();
      const full = new AppError('UNAVAILABLE', `This server holds its maximum of ${deps.maxConnections} connections (its open-file limit); retry later or connect to another node`);
      return turnAway(socket, toWsError(full, logger, 'connect'));
    }
    admitted++;
    const heardBeforeRead = changesBeforeRead.get(socket);
    changesBeforeRead.delete(socket);
    const principal = socket.data.principal;
    const { agentId } = principal;
    // Joined at once, so a membership change or a token revocation published during the setup below
    // already finds the socket.
    socket.join(lifetimeChannels(principal));
    metrics.agentsConnected.inc();
    logger.debug({ agentId, socketId: socket.id }, 'websocket connected');

    boundOutgoing(socket, outgoingBound);
    coalesceWrites(socket);
    const queue = new SerialQueue(deps.inFlight);
    guardEvents(socket, queue, guardDeps);

    queue.push(async () => {
      try {
        // The socket is now in its agent's and token's channels: a revocation or a disabling heard from
        // now on ends it there. One heard since the middleware's fresh read (before the join) found it
        // in neither: read the state again then; otherwise that read stands (one read per handshake).
        if (heardBeforeRead !== deps.auth.sessionAuth.changesHeard()) await deps.auth.sessionAuth.assertLive(principal, { fresh: true });
        const removalsBeforeRead = deps.removalsFollowed();
        const roomIds = (await deps.rooms.listForSocket(principal)).map((room) => room.id);
        if (!(await subscribeWithinLimit(socket, roomIds))) return;
        // A membership removed between the read above and the join found the socket not yet in the
        // room (its socketsLeave was a no-op): when this node followed any removal meanwhile, read
        // again and leave what is no longer ours. Removals followed after the join find the socket
        // in the room and unsubscribe it themselves.
        if (deps.removalsFollowed() === removalsBeforeRead) return;
        const current = new Set((await deps.rooms.listForSocket(principal)).map((room) => room.id));
        for (const roomId of roomIds) if (!current.has(roomId)) await subscriptions.leave(socket, roomId);
      } catch (err) {
        turnAway(socket, toWsError(err, logger, 'connect', socket));
      }
    });

    queues.set(socket, queue);
    socket.on('disconnect', disconnected);
  };

  // Shared by every socket (`this`): a listener per socket would keep the setup's scope with it for
  // as long as the connection is held.
  const queues = new WeakMap<AgentSocket, SerialQueue>();
  function disconnected(this: AgentSocket, reason: string): void {
    admitted--;
    metrics.agentsConnected.dec();
    logger.debug({ ...socketFields(this), reason }, 'websocket disconnected');
    queues.get(this)?.push(async () => {
      try {
        await subscriptions.disconnect(this);
      } catch (err) {
        logger.warn({ ...socketFields(this), err: { message: err instanceof Error ? err.message : String(err) } }, 'presence update on disconnect failed');
      }
    });
  }

  return { authenticate, connected };
}
