import { randomBytes } from 'node:crypto';
import { connect as tcpConnect, type Socket } from 'node:net';

/**
 * A bare WebSocket client over a TCP socket, written from RFC 6455 so a test controls every byte:
 * it can stop reading (a slow consumer), or send frames no well-behaved client would.
 */
export class RawWebSocket {
  private buffer = Buffer.alloc(0);
  private readonly texts: string[] = [];
  private waiters: (() => void)[] = [];
  closed = false;

  private constructor(readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.buffer = Buffer.concat([this.buffer, chunk]);
      this.parse();
    });
    socket.on('close', () => {
      this.closed = true;
      this.wake();
    });
    socket.on('error', () => undefined); // a reset by the server is an expected outcome here
  }

  /** Upgrades `GET path` (with the query) on `baseUrl`'s host to a WebSocket. */
  static open(baseUrl: string, path: string, headers: Record<string, string> = {}): Promise<RawWebSocket> {
    const { hostname, port } = new URL(baseUrl);
    return new Promise((resolve, reject) => {
      const socket = tcpConnect({ host: hostname, port: Number(port) });
      const key = randomBytes(16).toString('base64');
      socket.once('error', reject);
      socket.once('connect', () => {
        const extra = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('');
        socket.write(`GET ${path} HTTP/1.1\r\nHost: ${hostname}:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n${extra}\r\n`);
      });
      let head = Buffer.alloc(0);
      const onData = (chunk: Buffer): void => {
        head = Buffer.concat([head, chunk]);
        const end = head.indexOf('\r\n\r\n');
        if (end < 0) return;
        socket.off('data', onData);
        socket.off('error', reject);
        const status = head.subarray(0, end).toString('latin1').split('\r\n')[0]!;
        if (!status.includes(' 101 ')) {
          socket.destroy();
          reject(new Error(`upgrade refused: ${status}`));
          return;
        }
        const client = new RawWebSocket(socket);
        const rest = head.subarray(end + 4);
        if (rest.length > 0) socket.emit('data', rest);
        resolve(client);
      };
      socket.on('data', onData);
    });
  }

  /** Sends one masked frame (text by default). */
  send(payload: string | Buffer, opcode = 0x1): void {
    const data = typeof payload === 'string' ? Buffer.from(payload, 'utf8') : payload;
    const mask = randomBytes(4);
    let header: Buffer;
    if (data.length < 126) header = Buffer.from([0x80 | opcode, 0x80 | data.length]);
    else if (data.length < 65_536) {
      header = Buffer.alloc(4);
      header.writeUInt8(0x80 | opcode, 0);
      header.writeUInt8(0x80 | 126, 1);
      header.writeUInt16BE(data.length, 2);
    } else {
      header = Buffer.alloc(10);
      header.writeUInt8(0x80 | opcode, 0);
      header.writeUInt8(0x80 | 127, 1);
      header.writeBigUInt64BE(BigInt(data.length), 2);
    }
    const masked = Buffer.from(data);
    for (let i = 0; i < masked.length; i++) masked[i]! ^= mask[i % 4]!;
    this.socket.write(Buffer.concat([header, mask, masked]));
  }

  /** Resolves with the next text frame that matches, answering engine.io pings meanwhile. */
  async next(predicate: (text: string) => boolean = () => true, timeoutMs = 5000): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const index = this.texts.findIndex(predicate);
      if (index >= 0) return this.texts.splice(index, 1)[0]!;
      if (this.closed) throw new Error('connection closed');
      const left = deadline - Date.now();
      if (left <= 0) throw new Error('timed out waiting for a frame');
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** Stops reading: from now on the kernel buffers fill up and the server has to hold the rest. */
  stopReading(): void {
    this.socket.pause();
  }

  destroy(): void {
    this.socket.destroy();
  }

  private wake(): void {
    for (const wake of this.waiters.splice(0)) wake();
  }

  private parse(): void {
    for (;;) {
      if (this.buffer.length < 2) return;
      const opcode = this.buffer[0]! & 0x0f;
      let length = this.buffer[1]! & 0x7f;
      let offset = 2;
      if (length === 126) {
        if (this.buffer.length < 4) return;
        length = this.buffer.readUInt16BE(2);
        offset = 4;
      } else if (length === 127) {
        if (this.buffer.length < 10) return;
        length = Number(this.buffer.readBigUInt64BE(2));
        offset = 10;
      }
      if (this.buffer.length < offset + length) return;
      const payload = this.buffer.subarray(offset, offset + length);
      this.buffer = this.buffer.subarray(offset + length);
      if (opcode === 0x1) {
        const text = payload.toString('utf8');
        if (text === '2') this.send('3'); // engine.io ping -> pong
        else this.texts.push(text);
      } else if (opcode === 0x8) {
        this.closed = true;
      }
      this.wake();
    }
  }
}

/**
 * A Socket.IO client on a RawWebSocket: engine.io handshake, then CONNECT to /agents with the
 * JWT in the URL, then waits for `agent:hello-ack`.
 */
export async function rawAgentSocket(baseUrl: string, jwt: string): Promise<RawWebSocket> {
  const ws = await RawWebSocket.open(baseUrl, `/socket.io/?EIO=4&transport=websocket&token=${encodeURIComponent(jwt)}`);
  await ws.next((t) => t.startsWith('0{')); // engine.io open
  ws.send('40/agents,');
  await ws.next((t) => t.startsWith('40/agents,'));
  await ws.next((t) => t.startsWith('42/agents,["agent:hello-ack"'));
  return ws;
}
