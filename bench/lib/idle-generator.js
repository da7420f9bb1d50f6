import { SioClient } from './sio-client.js';

/**
 * A load-generator process for the idle-connections scenario (forked, driven over IPC). One process
 * may hold only as many sockets as its file limit allows, so the scenario splits its connections
 * over several of these, each binding its own loopback source address so that ephemeral ports do
 * not run out. Messages:
 *   {type: 'connect', url, nsp, queries, localAddress, slots, timeoutMs}: opens queries[i] (the
 *     handshake query: token, and for the relay agentId and rooms) at epoch
 *     time slots[i] (ms, open loop); replies {type: 'connected', latencies, lags, failures,
 *     firstError, lastAt} with each hello-ack latency in ms measured from its scheduled time
 *   {type: 'count'}: replies {type: 'count', open}
 *   {type: 'close'}: terminates every socket at once; replies {type: 'closed'}
 */
const clients = [];
const now = () => performance.timeOrigin + performance.now();

async function connectScheduled({ url, nsp, queries, localAddress, slots, timeoutMs }) {
  const latencies = new Array(queries.length).fill(null);
  // How late this process opened each connection: a starved generator shows here, not as the server's.
  const lags = new Array(queries.length);
  let failures = 0;
  let firstError = null;
  let lastAt = 0;
  await Promise.all(
    queries.map(async (query, i) => {
      const wait = slots[i] - now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      lags[i] = now() - slots[i];
      const client = new SioClient(url, nsp, query, { localAddress });
      clients.push(client);
      try {
        await client.connect(timeoutMs);
        const at = now();
        latencies[i] = at - slots[i];
        lastAt = Math.max(lastAt, at);
      } catch (err) {
        failures++;
        firstError ??= err.message;
      }
    }),
  );
  return { type: 'connected', latencies: latencies.filter((l) => l !== null), lags, failures, firstError, lastAt };
}

process.on('message', (msg) => {
  if (msg.type === 'connect') {
    connectScheduled(msg).then((reply) => process.send(reply));
  } else if (msg.type === 'count') {
    process.send({ type: 'count', open: clients.filter((c) => c.isOpen()).length });
  } else if (msg.type === 'close') {
    for (const c of clients) c.close();
    clients.length = 0;
    process.send({ type: 'closed' });
  }
});
process.on('disconnect', () => process.exit(0));
