import { setTimeout as sleep } from 'node:timers/promises';
import WebSocket from 'ws';

/**
 * The DevTools protocol of a child started with `--inspect=127.0.0.1:0` (its URL is read from the
 * child's output): `call(method, params)` resolves with the result; `close()` ends the session;
 * `onEvent` gets the notifications.
 */
export async function connectInspector(proc, { onEvent = () => {} } = {}) {
  let url = null;
  for (let i = 0; i < 50 && url === null; i++) {
    url = /ws:\/\/127\.0\.0\.1:\d+\/[0-9a-f-]+/.exec(proc.tail())?.[0] ?? null;
    if (url === null) await sleep(100);
  }
  if (url === null) throw new Error(`${proc.name}: no inspector URL in its output`);
  const ws = new WebSocket(url);
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  let id = 0;
  const pending = new Map();
  ws.on('message', (data) => {
    const msg = JSON.parse(data.toString());
    if (msg.id === undefined) return onEvent(msg); // a notification (e.g. a heap snapshot's chunk)
    pending.get(msg.id)?.(msg);
    pending.delete(msg.id);
  });
  const call = (method, params = {}) =>
    new Promise((resolve, reject) => {
      const n = ++id;
      pending.set(n, (msg) => (msg.error ? reject(new Error(`${method}: ${msg.error.message}`)) : resolve(msg.result)));
      ws.send(JSON.stringify({ id: n, method, params }));
    });
  return { call, close: () => ws.close() };
}

/**
 * Profiles a child started with `--inspect=127.0.0.1:0` over the DevTools protocol, only while
 * `during()` runs: a steady-state profile, without the startup and the fixtures.
 */
export async function profileDuring(proc, during, { intervalUs = 200 } = {}) {
  const { call, close } = await connectInspector(proc);
  await call('Profiler.enable');
  await call('Profiler.setSamplingInterval', { interval: intervalUs });
  await call('Profiler.start');
  const result = await during();
  const { profile } = await call('Profiler.stop');
  close();
  return { result, profile };
}
