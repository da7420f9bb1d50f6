import type { AgentSocket } from '../protocol.js';

/** The parts of engine.io's WebSocket transport and of the `ws` WebSocket used for coalescing. */
interface EngineTransport {
  name?: string;
  send(packets: unknown[]): void;
  socket?: { _socket?: { cork(): void; uncork(): void } };
}

/**
 * Coalesced writes. engine.io sends the packets waiting for a connection in one call, but writes
 * each as its own WebSocket frame, and `ws` writes each frame with its own `writev`. After a group
 * commit a socket is due several frames at once (its acks and the room's `message:new`), so the
 * TCP socket is corked for the whole call: the frames leave in one system call and one segment,
 * unchanged and in order, and the client wakes once.
 *
 * The functions are shared by every connection (`this` is the transport, the engine.io socket for
 * the listener): closures per connection would cost heap for as long as it is held.
 */
export function coalesceWrites(socket: AgentSocket): void {
  const transport = socket.conn.transport as unknown as EngineTransport;
  // A WebSocket connection is never upgraded again (the transports are polling and websocket), and
  // one more listener name on the connection doubles its listener table: only polling listens.
  if (transport.name === 'websocket') corkSends(transport);
  else socket.conn.once('upgrade', corkSends);
}

function corkSends(transport: EngineTransport): void {
  // engine.io does not type its transports' sockets; `socket._socket` is ws's net.Socket.
  if (transport.name === 'websocket' && transport.socket?._socket !== undefined) transport.send = corkedSend;
}

/** The transport's own `send` (engine.io's WebSocket transport class), inside one cork. */
function corkedSend(this: EngineTransport, packets: unknown[]): void {
  const tcp = this.socket!._socket!;
  tcp.cork();
  try {
    (Object.getPrototypeOf(this) as EngineTransport).send.call(this, packets);
  } finally {
    tcp.uncork();
  }
}
