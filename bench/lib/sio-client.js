import WebSocket from 'ws';

/**
 * A minimal Socket.IO v4 client over a raw WebSocket (Engine.IO protocol 4, websocket transport
 * only), for one namespace. The load generator receives tens of thousands of `message:new` frames
 * per second on one core; socket.io-client's decoding would make the generator the bottleneck, so
 * `message:new` frames are handed over undecoded (`onNew(buffer)`) and only the rest is parsed.
 *
 * Packets: engine.io `0` open, `2` ping (answered `3`), `4` message; inside a message, socket.io
 * `0` connect, `1` disconnect, `2` event, `3` ack, `4` connect error, each `/<nsp>,` prefixed.
 */
export class SioClient {
  /**
   * @param {string} baseUrl http://host:port
   * @param {string} namespace e.g. /agents
   * @param {Record<string,string>} query handshake query (the JWT goes in `token`)
   * @param {{localAddress?: string}} [options] localAddress: the loopback source address to bind
   *   (many connections need several, or the ephemeral ports of one run out)
   */
  constructor(baseUrl, namespace, query, { localAddress } = {}) {
    const params = new URLSearchParams({ ...query, EIO: '4', transport: 'websocket' });
    this.url = `${baseUrl.replace(/^http/, 'ws')}/socket.io/?${params}`;
    this.nsp = namespace;
    this.localAddress = localAddress;
    this.prefix = `4`;
    this.nspPrefix = `${namespace},`;
    this.newHeader = Buffer.from(`42${namespace},["message:new",`);
    this.nextAckId = 0;
    /** @type {Map<number, (result: unknown) => void>} */
    this.acks = new Map();
    /** @type {(frame: Buffer) => void} */
    this.onNew = () => {};
    /** @type {(name: string, args: unknown[]) => void} */
    this.onEvent = () => {};
    this.onClose = () => {};
    this.ws = null;
    this.open = false;
    this.hello = null;
  }

  /** Connects and resolves with the `agent:hello-ack` payload. */
  connect(timeoutMs = 15_000) {
    return new Promise((resolve, reject) => {
      let settled = false;
      const fail = (err) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        this.close();
        reject(err);
      };
      const timer = setTimeout(() => fail(new Error(`no agent:hello-ack within ${timeoutMs} ms`)), timeoutMs);
      const ws = new WebSocket(this.url, { perMessageDeflate: false, skipUTF8Validation: true, ...(this.localAddress ? { localAddress: this.localAddress } : {}) });
      this.ws = ws;
      ws.on('error', (err) => fail(err));
      ws.on('close', () => {
        this.open = false;
        fail(new Error('connection closed during the handshake'));
        this.onClose();
      });
      this.onEvent = (name, args) => {
        if (name === 'agent:hello-ack') {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          this.hello = args[0];
          resolve(args[0]);
        } else if (name === 'error') {
          fail(new Error(`server error event: ${JSON.stringify(args[0])}`));
        }
      };
      this.onConnectError = (payload) => fail(new Error(`connect error: ${payload}`));
      ws.on('message', (data) => this.#onFrame(data));
    });
  }

  #onFrame(data) {
    // Hot path first: a message:new broadcast, handed over as is.
    const header = this.newHeader;
    if (data.length > header.length && data[0] === 0x34 && data[1] === 0x32 && data.compare(header, 0, header.length, 0, header.length) === 0) {
      this.onNew(data);
      return;
    }
    const text = data.toString('utf8');
    const kind = text[0];
    if (kind === '2') {
      this.ws.send('3'); // heartbeat
      return;
    }
    if (kind === '0') {
      this.open = true;
      // Connect to the namespace; the token also goes as auth, the Socket.IO idiom.
      this.ws.send(`40${this.nspPrefix}${JSON.stringify({ token: new URL(this.url).searchParams.get('token') })}`);
      return;
    }
    if (kind !== '4') return;
    const type = text[1];
    let rest = text.slice(2);
    if (rest.startsWith(this.nsp)) rest = rest.slice(this.nspPrefix.length);
    if (type === '2' || type === '3') {
      let i = 0;
      while (i < rest.length && rest.charCodeAt(i) >= 48 && rest.charCodeAt(i) <= 57) i++;
      const id = i > 0 ? Number(rest.slice(0, i)) : null;
      const payload = JSON.parse(rest.slice(i));
      if (type === '3') {
        const callback = this.acks.get(id);
        if (callback) {
          this.acks.delete(id);
          callback(payload[0]);
        }
      } else {
        this.onEvent(payload[0], payload.slice(1));
      }
    } else if (type === '4') {
      this.onConnectError?.(rest);
    } else if (type === '1') {
      this.ws.close();
    }
  }

  isOpen() {
    return this.ws !== null && this.ws.readyState === WebSocket.OPEN;
  }

  emit(event, payload) {
    this.ws.send(`42${this.nspPrefix}${JSON.stringify([event, payload])}`);
  }

  /** Emits with an acknowledgement; `callback` gets the acknowledgement's first argument. */
  emitWithAck(event, payload, callback) {
    const id = this.nextAckId++;
    this.acks.set(id, callback);
    this.ws.send(`42${this.nspPrefix}${id}${JSON.stringify([event, payload])}`);
  }

  close() {
    if (this.ws && this.ws.readyState !== WebSocket.CLOSED) this.ws.terminate();
  }
}

/** Connects many clients with bounded concurrency; throws on the first failure. */
export async function connectAll(clients, concurrency = 32) {
  let next = 0;
  const worker = async () => {
    while (next < clients.length) {
      const client = clients[next++];
      await client.connect();
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, clients.length) }, worker));
}
