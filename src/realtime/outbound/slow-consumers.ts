import type { Logger } from 'pino';
import type { AgentSocket } from '../protocol.js';

// The outgoing side of a connection: slow consumers are bounded (boundOutgoing) and frames due
// together are written together (coalesceWrites).

/**
 * Slow consumers. A client that stops reading (a stalled network, a bug, or on purpose) would make
 * the server hold everything sent to it: engine.io queues packets in its write buffer once the
 * transport stops accepting them, without limit. Each connection is therefore bounded: when a packet
 * is queued while more than `maxBytes` is still waiting to be written to it (engine.io's write
 * buffer plus the WebSocket's own and the TCP socket's userland buffers), the connection is dropped
 * at once and everything held for it is freed.
 *
 * The test is made when a packet is queued (growth happens only then), against what was waiting
 * before it, so one large packet (a history page of large messages) never trips it on its own: a
 * connection holds at most `maxBytes` plus one packet. Text packets count their UTF-16 length,
 * binary ones their byte length: close to what they occupy in memory, at O(1) per packet.
 */

interface EnginePacket {
  data?: unknown;
}

/** The part of a `ws` WebSocket used here and by the in-flight bound (connection/event-guard.ts). */
export interface RawWebSocket {
  readonly bufferedAmount: number;
  terminate(): void;
  /** Public `ws` API: stop (and restart) reading the TCP socket. */
  pause(): void;
  resume(): void;
}

const bounds = new WeakMap<AgentSocket, OutgoingBound>();

function sizeOf(data: unknown): number {
  if (typeof data === 'string') return data.length;
  if (data instanceof ArrayBuffer || ArrayBuffer.isView(data)) return data.byteLength;
  return 0;
}

/** The underlying `ws` WebSocket while the connection's transport is WebSocket (not long-polling). */
export function webSocketOf(socket: AgentSocket): RawWebSocket | undefined {
  // engine.io does not type its transports' sockets; `name` and `socket` are stable since 4.x.
  const transport = socket.conn.transport as unknown as { name?: string; socket?: RawWebSocket };
  return transport.name === 'websocket' ? transport.socket : undefined;
}

/** Outgoing data the server holds for this socket right now (0 for a socket not bounded here). */
export function bufferedBytesOf(socket: AgentSocket): number {
  return bounds.get(socket)?.buffered() ?? 0;
}

export function boundOutgoing(socket: AgentSocket, deps: { maxBytes: number; logger: Logger }): void {
  const bound = new OutgoingBound(socket, deps);
  bounds.set(socket, bound);
  socket.conn.on('packetCreate', bound.packetCreated.bind(bound));
  socket.conn.on('flush', bound.flushed.bind(bound));
}

/** One connection's bound: a class, so a held connection keeps one object, not a closure per step. */
class OutgoingBound {
  /** Packets in engine.io's write buffer, not yet handed to the transport. */
  private queued = 0;
  // An upper bound of the WebSocket's own buffers, so that a packet (one per delivery) need not read
  // them: what they held when last read, plus what was flushed to them since, counted high (3 bytes
  // per UTF-16 unit, 16 for the packet type and the frame header). They only shrink between
  // flushes. While the bound stays under the limit the real figure is too; once it does not, the
  // real figure decides and becomes the new bound. So a packet is refused exactly when it would be
  // with the real figure, which is read once per third of `maxBytes` flushed or so, not per packet.
  private flushedBound = 0;
  private queuedBound = 0;
  private dropped = false;

  constructor(
    private readonly socket: AgentSocket,
    private readonly deps: { maxBytes: number; logger: Logger },
  ) {}

  private webSocketBuffered(): number {
    return webSocketOf(this.socket)?.bufferedAmount ?? 0;
  }

  buffered(): number {
    return this.dropped ? 0 : this.queued + this.webSocketBuffered();
  }

  packetCreated(packet: EnginePacket): void {
    if (this.dropped) return;
    const { maxBytes, logger } = this.deps;
    const size = sizeOf(packet.data);
    if (this.queued + this.flushedBound > maxBytes) {
      this.flushedBound = this.webSocketBuffered();
      const before = this.queued + this.flushedBound;
      if (before > maxBytes) {
        this.dropped = true;
        logger.warn({ agentId: this.socket.data.principal.agentId, socketId: this.socket.id, bufferedBytes: before, limit: maxBytes }, 'websocket dropped: slow consumer (outgoing data over the limit)');
        // Not from inside engine.io's sendPacket (still running) nor a broadcast loop over the sockets.
        queueMicrotask(() => this.drop());
        return;
      }
    }
    this.queued += size;
    this.queuedBound += 3 * size + 16;
  }

  /** The write buffer was handed to the transport (and so to the WebSocket's buffers). */
  flushed(): void {
    this.flushedBound += this.queuedBound;
    this.queued = 0;
    this.queuedBound = 0;
  }

  private drop(): void {
    const ws = webSocketOf(this.socket);
    // engine.io: closed at once, its write buffer discarded, nothing more is queued.
    this.socket.conn.close(true);
    // And the TCP socket destroyed: a close handshake would wait behind the unread data.
    ws?.terminate();
    this.queued = 0;
  }
}
