import type { Logger } from 'pino';
import type { Principal } from '../../core/principal.js';
import { codePointLength } from '../../core/validation.js';
import { validationError } from '../../errors.js';
import type { Metrics } from '../../ops/metrics.js';
import { REQUEST_ID_MAX, type AgentSocket, type ClientEventName } from '../protocol.js';
import type { Finish, SerialQueue } from './serial-queue.js';
import { reply, toWsError, type Ack } from './ws-errors.js';

/**
 * The one wrapper every client event goes through: payload envelope, queueing, the service call,
 * the acknowledgement or `error` event (ws-errors.ts), and the latency metric. Handlers are then a
 * few lines.
 */

export interface EventContext {
  socket: AgentSocket;
  principal: Principal;
  /** The client's payload, known to be a plain object. */
  payload: Record<string, unknown>;
}

interface EventOptions {
  /** The payload may be omitted (`room:list`). */
  payloadOptional?: boolean;
  /** The reply only exists as an acknowledgement (`room:list`, `message:history`). */
  requiresAck?: boolean;
}

/** An event run alone in the socket's queue (serial-queue.ts `push`). */
interface ExclusiveEventSpec extends EventOptions {
  /** Returns the acknowledgement value; nothing means `{ok: true}` (when the client asked for one). */
  handle(event: EventContext): Promise<object | void>;
}

/** An event pipelined in the socket's queue (serial-queue.ts `pipeline`): `message:send`. */
interface PipelinedEventSpec extends EventOptions {
  /**
   * Resolves once the work is queued where its order is fixed (the message is in its group commit);
   * `done` settles with the acknowledgement value. The socket's next events begin meanwhile.
   */
  begin(event: EventContext): Promise<{ done: Promise<object | void> }>;
}

export type EventSpec = ExclusiveEventSpec | PipelinedEventSpec;

// Defined with the payload schemas; exported here too for the modules that read it from here.
export { REQUEST_ID_MAX };

/** Socket.IO passes the acknowledgement callback, when the client asked for one, as the last argument. */
export function splitArgs(args: readonly unknown[]): { payload: unknown; ack: Ack | undefined } {
  const last = args[args.length - 1];
  const ack = typeof last === 'function' ? (last as Ack) : undefined;
  return { payload: args[0] === last && ack ? undefined : args[0], ack };
}

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value) && !Buffer.isBuffer(value);

const validRequestId = (value: unknown): value is string => typeof value === 'string' && codePointLength(value) <= REQUEST_ID_MAX;

/** The request's `requestId` when it is one we can echo. */
export function requestIdOf(payload: unknown): string | undefined {
  return isPlainObject(payload) && validRequestId(payload.requestId) ? payload.requestId : undefined;
}

function checkEnvelope(payload: unknown, spec: EventSpec): Record<string, unknown> {
  if (payload === undefined && spec.payloadOptional) return {};
  if (!isPlainObject(payload)) throw validationError({ payload: 'must be an object' });
  if (payload.requestId !== undefined && !validRequestId(payload.requestId)) {
    throw validationError({ requestId: `must be a string of at most ${REQUEST_ID_MAX} characters` });
  }
  return payload;
}

export interface EventDeps {
  metrics: Metrics;
  logger: Logger;
}

/** Runs an admitted event (`[name, ...args, ack?]`) of `socket` in the socket's serial queue. */
export type EventRunner = (socket: AgentSocket, queue: SerialQueue, packet: readonly unknown[]) => void;

/**
 * The one runner of every socket's events, made once per server: the socket's guard
 * (event-guard.ts) hands it each event it admits, so a socket holds no listener per event name (a
 * listener per name per socket cost about 1 KB of heap per connection, bench/heap-per-connection.js).
 */
export function eventRunner(deps: EventDeps, handlers: Readonly<Record<ClientEventName, EventSpec>>): EventRunner {
  const specs = new Map<string, EventSpec>(Object.entries(handlers));
  return (socket, queue, packet) => {
    const name = packet[0];
    const spec = typeof name === 'string' ? specs.get(name) : undefined;
    if (spec !== undefined) runEvent(socket, queue, deps, name as ClientEventName, spec, packet.slice(1));
  };
}

/** One event of `socket`: its work runs in the socket's serial queue. */
function runEvent(socket: AgentSocket, queue: SerialQueue, deps: EventDeps, name: ClientEventName, spec: EventSpec, args: readonly unknown[]): void {
  const received = performance.now();
  const { payload, ack } = splitArgs(args);
  const context = (): EventContext => {
    const input = checkEnvelope(payload, spec);
    if (spec.requiresAck && !ack) {
      throw validationError({ ack: 'is required' }, `${name} replies only through an acknowledgement callback`);
    }
    return { socket, principal: socket.data.principal, payload: input };
  };
  // The acknowledgement, or the error (ws-errors.ts), as the task's last step.
  const answer = (outcome: Promise<object | void>): Promise<Finish> => {
    const observe = (): void => deps.metrics.wsLatency.observe({ event: name }, (performance.now() - received) / 1000);
    return outcome.then(
      (result) => () => {
        ack?.(result ?? { ok: true });
        observe();
      },
      (err: unknown) => () => {
        reply(socket, toWsError(err, deps.logger, name, socket), ack, requestIdOf(payload));
        observe();
      },
    );
  };
  // Socket.IO drops packets after a disconnect; do the same for ones still waiting here.
  const dropped: Finish = () => undefined;

  if ('begin' in spec) {
    queue.pipeline(async () => {
      if (!socket.connected) return { rest: Promise.resolve(dropped) };
      try {
        const { done } = await spec.begin(context());
        return { rest: answer(done) };
      } catch (err) {
        return { rest: answer(Promise.reject(err)) };
      }
    });
  } else {
    queue.push(async () => {
      if (!socket.connected) return;
      const finish = await answer((async () => spec.handle(context()))());
      finish();
    });
  }
}
