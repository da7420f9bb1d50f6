import { io, type ManagerOptions, type Socket, type SocketOptions } from 'socket.io-client';
import { afterAll, expect } from 'vitest';

/**
 * A small socket.io-client toolkit for integration tests: connect to `/agents`, await events,
 * emit with an acknowledgement and a timeout. Sockets never reconnect on their own here, so a
 * test sees exactly the disconnects the server causes.
 */

export type ClientSocket = Socket;

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read arbitrary JSON payloads
export type Payload = any;

const DEFAULT_TIMEOUT_MS = 5000;

export interface ConnectOptions extends Partial<ManagerOptions & SocketOptions> {
  /** Send the JWT as `auth.token` instead of the query `token`. */
  tokenIn?: 'query' | 'auth';
}

/** Opens a socket on `${url}/agents` with the JWT (query `token` by default; none when undefined). */
export function connect(url: string, jwt: string | undefined, options: ConnectOptions = {}): ClientSocket {
  const { tokenIn = 'query', ...rest } = options;
  const auth: Record<string, unknown> = {};
  const query: Record<string, string> = {};
  if (jwt !== undefined) {
    if (tokenIn === 'auth') auth.token = jwt;
    else query.token = jwt;
  }
  return io(`${url}/agents`, {
    transports: ['websocket'],
    reconnection: false,
    forceNew: true,
    timeout: DEFAULT_TIMEOUT_MS,
    auth,
    query,
    ...rest,
  });
}

/** Resolves with the payload of the next `event` (matching `predicate`), rejects after `timeoutMs`. */
export function waitFor<T = Payload>(socket: ClientSocket, event: string, predicate: (payload: T) => boolean = () => true, timeoutMs = DEFAULT_TIMEOUT_MS): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      socket.off(event, listener);
      reject(new Error(`timed out after ${timeoutMs} ms waiting for "${event}"`));
    }, timeoutMs);
    const listener = (payload: T): void => {
      if (!predicate(payload)) return;
      clearTimeout(timer);
      socket.off(event, listener);
      resolve(payload);
    };
    socket.on(event, listener);
  });
}

/** Connects and resolves once `agent:hello-ack` arrived; rejects on `error` or a failed connection. */
export async function connectReady(url: string, jwt: string, options: ConnectOptions = {}): Promise<{ socket: ClientSocket; hello: { agentId: string; rooms: string[]; lastSeqs: Record<string, number> } }> {
  const socket = connect(url, jwt, options);
  const hello = waitFor(socket, 'agent:hello-ack');
  const failed = new Promise<never>((_, reject) => {
    socket.once('error', (e: unknown) => reject(new Error(`error event before hello: ${JSON.stringify(e)}`)));
    socket.once('connect_error', (e: Error) => reject(new Error(`connect_error: ${e.message}`)));
  });
  try {
    return { socket, hello: await Promise.race([hello, failed]) };
  } catch (err) {
    socket.disconnect();
    throw err;
  }
}

/** Emits and resolves with the acknowledgement; rejects when none comes within `timeoutMs`. */
export function emitWithAck<T = Payload>(socket: ClientSocket, event: string, payload?: unknown, timeoutMs = DEFAULT_TIMEOUT_MS): Promise<T> {
  const emitter = socket.timeout(timeoutMs);
  return (payload === undefined ? emitter.emitWithAck(event) : emitter.emitWithAck(event, payload)) as Promise<T>;
}

/** Records every payload of `event` the socket receives from now on. */
export function record<T = Payload>(socket: ClientSocket, event: string): T[] {
  const seen: T[] = [];
  socket.on(event, (payload: T) => seen.push(payload));
  return seen;
}

/**
 * A round trip on `socket`: resolves once everything the server emitted to it before this call was
 * received (one connection delivers in order). Use it to assert that something did NOT arrive.
 */
export async function roundTrip(socket: ClientSocket): Promise<void> {
  await emitWithAck(socket, 'room:list', {});
}

/** Resolves with the disconnect reason. */
export function disconnected(socket: ClientSocket, timeoutMs = DEFAULT_TIMEOUT_MS): Promise<string> {
  if (socket.disconnected && !socket.active) return Promise.resolve('already disconnected');
  return waitFor<string>(socket, 'disconnect', () => true, timeoutMs);
}

/** Expects the handshake's auth failure (docs/protocol.md, Connecting): `error` AUTH_FAILED, then a server disconnect, and no hello. Resolves with the error message. */
export async function expectAuthFailed(socket: ClientSocket): Promise<string> {
  const hellos = record(socket, 'agent:hello-ack');
  const order: string[] = [];
  socket.on('error', () => order.push('error'));
  socket.on('disconnect', () => order.push('disconnect'));
  const error = waitFor(socket, 'error');
  const reason = await disconnected(socket);
  expect(await error).toEqual({ code: 'AUTH_FAILED', message: expect.any(String) });
  expect(reason).toBe('io server disconnect');
  expect(order).toEqual(['error', 'disconnect']);
  expect(hellos).toEqual([]);
  return (await error).message as string;
}

/**
 * In a describe block: a function that opens a ready socket to the suite's server for an agent (or a
 * JWT), every socket disconnected after the block.
 */
export function useSockets(t: { server: { url: string } }): (who: string | { jwt: string }) => Promise<ClientSocket> {
  const sockets: ClientSocket[] = [];
  afterAll(() => {
    for (const s of sockets.splice(0)) s.disconnect();
  });
  return async (who) => {
    const { socket } = await connectReady(t.server.url, typeof who === 'string' ? who : who.jwt);
    sockets.push(socket);
    return socket;
  };
}
