import { setTimeout as sleep } from 'node:timers/promises';
import { newHistogram, recordMs, summarize } from './histogram.js';

const MARK = Buffer.from('~q');

/** The sequence number a `~q<seq>~` marker carries in a frame, or -1. */
function seqOf(frame) {
  let at = frame.indexOf(MARK, 20);
  if (at < 0) return -1;
  at += 2;
  let seq = 0;
  let digits = 0;
  for (; at < frame.length; at++) {
    const c = frame[at];
    if (c < 48 || c > 57) break;
    seq = seq * 10 + (c - 48);
    digits++;
  }
  return digits > 0 ? seq : -1;
}

/** The first `count` clients of each room: its sending connections. */
export function sendersOf(roomOf, count) {
  const seen = new Map();
  const senders = [];
  roomOf.forEach((roomId, i) => {
    const n = seen.get(roomId) ?? 0;
    if (n < count) senders.push(i);
    seen.set(roomId, n + 1);
  });
  return senders;
}

/**
 * Open-loop `message:send` load over connected clients, each a member of one room. Messages are
 * sent at fixed scheduled times whatever the server does; ack and delivery latencies are measured
 * from the scheduled time (no coordinated omission). Each step counts acks, ack errors and every
 * `message:new` each member receives (the sender included), so loss is exact.
 */
export class RoomLoad {
  /**
   * @param {{clients: import('./sio-client.js').SioClient[], roomOf: string[], roomSize: Map<string, number>, senders?: number[], bodyChars?: number, data?: object|null, serverCpu?: () => number|null, extras?: {fields: (i: number, sender: number, roomId: string) => object, acked: (roomId: string, messageId: string) => void}|null}} options
   *   roomOf[i]: the room id of clients[i]; `data`: a JSON object every send carries (docs/protocol.md, Messages); `extras`: more fields for message i (mentions, replyTo), told of each acknowledged message
   */
  constructor({ clients, roomOf, roomSize, senders = null, bodyChars = 140, data = null, serverCpu = () => null, extras = null }) {
    this.extras = extras;
    this.clients = clients;
    /** Indices of the clients that send (round robin); all by default. */
    this.senders = senders ?? clients.map((_, i) => i);
    this.roomOf = roomOf;
    this.roomSize = roomSize;
    this.serverCpu = serverCpu;
    this.padding = ' '.padEnd(Math.max(0, bodyChars - 16), 'x');
    this.data = data;
    this.seqBase = 1;
    this.lastFrameAt = performance.now();
    this.step_ = null;
    clients.forEach((client, index) => {
      client.onNew = (frame) => this.#onDelivery(index, frame);
    });
  }

  #onDelivery(receiver, frame) {
    const now = performance.now();
    this.lastFrameAt = now;
    const s = this.step_;
    if (!s) return;
    const i = seqOf(frame) - s.base;
    if (i < 0 || i >= s.n) {
      s.stray++;
      return;
    }
    s.delivered[i]++;
    s.deliveredTotal++;
    if (receiver !== s.sender[i]) recordMs(s.deliveryHist, now - s.sched[i]);
  }

  #send(s, i, now) {
    const sender = this.senders[i % this.senders.length];
    s.sender[i] = sender;
    recordMs(s.lagHist, now - s.sched[i]);
    const roomId = this.roomOf[sender];
    s.expected += this.roomSize.get(roomId);
    const payload = { roomId, body: `~q${s.base + i}~${this.padding}`, ...(this.extras?.fields(s.base + i, sender, roomId) ?? {}) };
    if (this.data !== null) payload.data = this.data;
    this.clients[sender].emitWithAck('message:send', payload, (ack) => {
      const at = performance.now();
      this.lastFrameAt = at;
      if (ack && typeof ack === 'object' && typeof ack.messageId === 'string') {
        this.extras?.acked(roomId, ack.messageId);
        s.acked++;
        recordMs(s.ackHist, at - s.sched[i]);
      } else {
        s.ackErrors++;
        s.firstError ??= JSON.stringify(ack).slice(0, 200);
      }
    });
  }

  /**
   * One step: `rate` messages per second for `durationMs`, then up to `drainMs` for the last
   * acks and deliveries. Passing means every message acknowledged and delivered to every member,
   * and p99 ack latency under `p99LimitMs`.
   */
  async step({ rate, durationMs, drainMs = 2000, p99LimitMs = 50 }) {
    const reconnected = await this.reconnectClosed();
    const n = Math.max(1, Math.round((rate * durationMs) / 1000));
    const s = {
      base: this.seqBase,
      n,
      sched: new Float64Array(n),
      sender: new Int32Array(n),
      delivered: new Uint16Array(n),
      deliveredTotal: 0,
      expected: 0,
      acked: 0,
      ackErrors: 0,
      firstError: null,
      stray: 0,
      ackHist: newHistogram(),
      deliveryHist: newHistogram(),
      lagHist: newHistogram(),
    };
    this.seqBase += n + 1;
    this.step_ = s;
    const interval = 1000 / rate;
    const cpu0 = process.cpuUsage();
    const serverCpu0 = this.serverCpu();
    const t0 = performance.now() + 2;
    for (let i = 0; i < n; i++) s.sched[i] = t0 + i * interval;

    await new Promise((resolve) => {
      let i = 0;
      const tick = () => {
        const now = performance.now();
        while (i < n && s.sched[i] <= now) this.#send(s, i++, now);
        if (i >= n) return resolve();
        const wait = s.sched[i] - performance.now();
        // Above 200 msg/s sends go out in 1 ms batches (the lateness counts in the latency): no busy
        // waiting to steal the generator's CPU from receiving. Slower rates sleep until just before
        // the due time, then yield until it comes, for sub-millisecond precision at low load.
        if (interval < 5) setTimeout(tick, 1);
        else if (wait > 1.5) setTimeout(tick, wait - 1);
        else setImmediate(tick);
      };
      tick();
    });
    const sendEnd = performance.now();
    const wall = (sendEnd - t0) / 1000;
    const generatorCpu = process.cpuUsage(cpu0);
    const serverCpu1 = this.serverCpu();

    const complete = () => s.acked + s.ackErrors === n && s.deliveredTotal >= s.expected;
    const drainDeadline = performance.now() + drainMs;
    while (!complete() && performance.now() < drainDeadline) await sleep(2);
    this.step_ = null;

    const ack = summarize(s.ackHist);
    // Per message: a duplicate to one member must not hide a loss to another.
    let lostDeliveries = 0;
    let duplicates = 0;
    for (let i = 0; i < n; i++) {
      const size = this.roomSize.get(this.roomOf[s.sender[i]]);
      if (s.delivered[i] < size) lostDeliveries += size - s.delivered[i];
      else duplicates += s.delivered[i] - size;
    }
    const lost = n - s.acked - s.ackErrors + lostDeliveries;
    const result = {
      rate,
      durationMs,
      reconnected,
      sent: n,
      acked: s.acked,
      ackErrors: s.ackErrors,
      firstError: s.firstError,
      expectedDeliveries: s.expected,
      delivered: s.deliveredTotal,
      lost,
      duplicates,
      ack,
      delivery: summarize(s.deliveryHist),
      sendLag: summarize(s.lagHist),
      generatorCpu: wall > 0 ? Math.round(((generatorCpu.user + generatorCpu.system) / 1e6 / wall) * 100) / 100 : null,
      serverCpu: serverCpu0 !== null && serverCpu1 !== null && wall > 0 ? Math.round(((serverCpu1 - serverCpu0) / wall) * 100) / 100 : null,
      // Less sensitive to other load on the machine than latency: what one message costs the server.
      serverCpuPerMessageUs: serverCpu0 !== null && serverCpu1 !== null ? Math.round(((serverCpu1 - serverCpu0) * 1e6) / n) : null,
      pass: lost === 0 && duplicates === 0 && s.ackErrors === 0 && ack.p99 !== null && ack.p99 < p99LimitMs,
    };
    if (!complete()) await this.quiesce();
    return result;
  }

  /** Reconnects clients the server dropped (e.g. under overload), so one failure does not poison the next step. */
  async reconnectClosed() {
    let count = 0;
    for (const client of this.clients) {
      if (!client.isOpen()) {
        await client.connect();
        count++;
      }
    }
    return count;
  }

  /** Waits until no frame has arrived for a while: a backlog must not spill into the next step. */
  async quiesce(quietMs = 300, maxMs = 20_000) {
    const deadline = performance.now() + maxMs;
    while (performance.now() - this.lastFrameAt < quietMs && performance.now() < deadline) await sleep(20);
  }
}
