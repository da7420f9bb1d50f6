import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { jwtMinter, startBaseline, startService } from '../lib/service.js';
import { baselineClients, serviceClients } from './rooms.js';
import { cpuPercent } from './inbox.js';

const AGENTS = 200;
const ROOM_SIZE = 10;
const PERIOD_MS = 1000;

/**
 * Scenario 22 (docs/benchmarks.md): 200 agents (all of them with --quick too), connected over the
 * WebSocket in rooms of 10, each setting `typing` in its room every second (`activity:set`, spread
 * evenly over the second), so each room's members get up to 10 `activity:update`s a second. The
 * service's CPU (all threads, from /proc, as bench/cpu-per-message.js reads it) over a window, in %
 * of one core, against the same window with the agents connected and quiet; the target is under 5 %.
 * Also counted: the acknowledgements that were not `{ok: true}` and the updates the members got; as
 * a yardstick, the CPU of the same agents sending as many `message:send`s instead; and the floor: R1
 * (the bare Socket.IO relay) relaying as many events to the same rooms, the transport's own cost of
 * 200 events in and 2,000 out a second, in the same run.
 */
export async function activityScenario(bench) {
  const { quick, tmp, log } = bench;
  const windowMs = quick ? 3000 : 10_000;
  const mint = jwtMinter(bench.jwtSecret);
  const procs = [];
  let clients = [];
  const stopAll = [];
  try {
    const r1 = await startBaseline({ name: 'r1-activity', script: 'bench/baselines/relay.js', env: { BASELINE_MODE: 'r1' } });
    procs.push(r1.proc);
    const service = await startService({ name: 'service-activity', databaseUrl: `sqlite:${join(tmp, 'activity.sqlite')}`, jwtSecret: bench.jwtSecret, profileDir: bench.profileDir });
    procs.push(service.proc);
    const set = await serviceClients(service, { rooms: AGENTS / ROOM_SIZE, roomSize: ROOM_SIZE, mint });
    clients = set.clients;
    const counts = { acked: 0, refused: 0, firstRefusal: null, updates: 0 };
    clients.forEach((client) => {
      client.onEvent = (event) => {
        if (event === 'activity:update') counts.updates++;
      };
    });
    log(`${clients.length} agents connected in ${AGENTS / ROOM_SIZE} rooms of ${ROOM_SIZE}`);
    const quietCpuPercent = await cpuPercent(service.proc, windowMs);

    // Each agent emits once a second, at its own offset in the second, for a warm-up and a window.
    const drive = async (event, payloadOf, proc = service.proc) => {
      const ticker = { stop: false };
      stopAll.push(ticker);
      const loop = (async () => {
        const t0 = performance.now();
        for (let tick = 0; !ticker.stop; tick++) {
          for (let i = 0; i < clients.length && !ticker.stop; i++) {
            const at = t0 + tick * PERIOD_MS + (i * PERIOD_MS) / clients.length;
            const wait = at - performance.now();
            if (wait > 1) await sleep(wait);
            clients[i].emitWithAck(event, payloadOf(i, tick), (ack) => {
              if (ack?.ok === true || typeof ack?.messageId === 'string') counts.acked++;
              else {
                counts.refused++;
                counts.firstRefusal ??= JSON.stringify(ack).slice(0, 200);
              }
            });
          }
        }
      })();
      await sleep(quick ? 1000 : 3000); // warm-up
      const before = { ...counts };
      const cpu = await cpuPercent(proc, windowMs);
      const sent = counts.acked + counts.refused - before.acked - before.refused;
      const updates = counts.updates - before.updates;
      ticker.stop = true;
      await loop;
      return { cpu, perSecond: Math.round(sent / (windowMs / 1000)), updatesPerSecond: Math.round(updates / (windowMs / 1000)) };
    };
    const typing = await drive('activity:set', (i) => ({ roomId: set.roomOf[i], state: 'typing' }));
    const typingCpuPercent = typing.cpu;
    const seconds = windowMs / 1000;
    const setsPerSecond = typing.perSecond;
    const updatesPerSecond = typing.updatesPerSecond;
    // The yardstick: the same agents sending as many messages instead (each delivered to its room's 10 members).
    await sleep(1500);
    const messages = await drive('message:send', (i, tick) => ({ roomId: set.roomOf[i], body: `message ${tick}` }));
    // The floor: R1 relaying as many events from as many agents to rooms of the same size.
    for (const c of clients) c.close();
    const bare = await baselineClients(r1.url, { rooms: AGENTS / ROOM_SIZE, roomSize: ROOM_SIZE, mint });
    clients = bare.clients;
    const relayed = await drive('message:send', (i, tick) => ({ roomId: bare.roomOf[i], body: `typing ${tick}` }), r1.proc);
    const costPercent = typingCpuPercent === null || quietCpuPercent === null ? null : Math.round((typingCpuPercent - quietCpuPercent) * 100) / 100;
    log(`cpu      ${typingCpuPercent} % of a core while ${clients.length} agents set typing every second (${quietCpuPercent} % connected and quiet: ${costPercent} % for the activity)`);
    log(`sets     ${setsPerSecond}/s, ${updatesPerSecond} activity:update/s received, ${counts.refused} refused${counts.firstRefusal ? ` (${counts.firstRefusal})` : ''}`);
    log(`messages ${messages.cpu} % of a core for ${messages.perSecond} message:send/s from the same agents instead (the yardstick)`);
    log(`R1       ${relayed.cpu} % of a core relaying ${relayed.perSecond} events/s to the same rooms (the transport's floor): the service ${typingCpuPercent !== null && relayed.cpu ? (typingCpuPercent / relayed.cpu).toFixed(2) : 'n/a'} x`);
    return {
      agents: clients.length, roomSize: ROOM_SIZE, windowSeconds: seconds,
      cpuPercent: typingCpuPercent, quietCpuPercent, activityCostPercent: costPercent,
      setsPerSecond, updatesPerSecond, refused: counts.refused,
      messageCpuPercent: messages.cpu, messagesPerSecond: messages.perSecond,
      r1CpuPercent: relayed.cpu, r1EventsPerSecond: relayed.perSecond,
      // The target: under 5 % of a core in all (the quiet figure included).
      meetsTarget: typingCpuPercent !== null && typingCpuPercent < 5 && counts.refused === 0,
    };
  } finally {
    for (const ticker of stopAll) ticker.stop = true;
    for (const c of clients) c.close();
    for (const p of procs) await p.stop();
  }
}
