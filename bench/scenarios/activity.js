import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { jwtMinter, startService } from '../lib/service.js';
import { serviceClients } from './rooms.js';
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
 * Also counted: the acknowledgements that were not `{ok: true}` and the updates the members got.
 */
export async function activityScenario(bench) {
  const { quick, tmp, log } = bench;
  const windowMs = quick ? 3000 : 10_000;
  const mint = jwtMinter(bench.jwtSecret);
  const procs = [];
  let clients = [];
  const ticker = { stop: false };
  try {
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

    // Each agent sets typing once a second, at its own offset in the second.
    const loop = (async () => {
      const t0 = performance.now();
      for (let tick = 0; !ticker.stop; tick++) {
        for (let i = 0; i < clients.length && !ticker.stop; i++) {
          const at = t0 + tick * PERIOD_MS + (i * PERIOD_MS) / clients.length;
          const wait = at - performance.now();
          if (wait > 1) await sleep(wait);
          clients[i].emitWithAck('activity:set', { roomId: set.roomOf[i], state: 'typing' }, (ack) => {
            if (ack?.ok === true) counts.acked++;
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
    const typingCpuPercent = await cpuPercent(service.proc, windowMs);
    const seconds = windowMs / 1000;
    const setsPerSecond = Math.round((counts.acked + counts.refused - before.acked - before.refused) / seconds);
    const updatesPerSecond = Math.round((counts.updates - before.updates) / seconds);
    ticker.stop = true;
    await loop;
    const costPercent = typingCpuPercent === null || quietCpuPercent === null ? null : Math.round((typingCpuPercent - quietCpuPercent) * 100) / 100;
    log(`cpu      ${typingCpuPercent} % of a core while ${clients.length} agents set typing every second (${quietCpuPercent} % connected and quiet: ${costPercent} % for the activity)`);
    log(`sets     ${setsPerSecond}/s, ${updatesPerSecond} activity:update/s received, ${counts.refused} refused${counts.firstRefusal ? ` (${counts.firstRefusal})` : ''}`);
    return {
      agents: clients.length, roomSize: ROOM_SIZE, windowSeconds: seconds,
      cpuPercent: typingCpuPercent, quietCpuPercent, activityCostPercent: costPercent,
      setsPerSecond, updatesPerSecond, refused: counts.refused,
      // The target: under 5 % of a core in all (the quiet figure included).
      meetsTarget: typingCpuPercent !== null && typingCpuPercent < 5 && counts.refused === 0,
    };
  } finally {
    ticker.stop = true;
    for (const c of clients) c.close();
    for (const p of procs) await p.stop();
  }
}
