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
 */
export function coalesceWrites(socket: AgentSocket): void {
  const wrap = (transport: EngineTransport): void => {
    // engine.io does not type its transports' sockets; `socket._socket` is ws's net.Socket.
    const tcp = transport.name === 'websocket' ? transport.socket?._socket : undefined;
    if (tcp === undefined) return;
    const send = transport.send.bind(transport);
    transport.send = (packets) => {
      tcp.cork();
      try {
        send(packets);
      } finally {
        tcp.uncork();
      }
    };
  };
  wrap(socket.conn.transport as unknown as EngineTransport);
  socket.conn.on('upgrade', (transport: unknown) => wrap(transport as EngineTransport));
}
