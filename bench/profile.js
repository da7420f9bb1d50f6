#!/usr/bin/env node
/**
 * `node bench/profile.js [--room-size=10] [--rooms=10] [--rate=800] [--seconds=10]`
 *
 * Where the service's time goes under `message:send` load: starts the built service with
 * `--cpu-prof`, runs one open-loop step at a fixed rate, stops the service (which writes the
 * profile) and prints its summary (bench/profile-summary.js). The .cpuprofile file opens in
 * Chrome DevTools or speedscope as a flame graph.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pinSelf } from './lib/processes.js';
import { RoomLoad } from './lib/room-load.js';
import { describe } from './lib/search.js';
import { jwtMinter, newJwtSecret, startService } from './lib/service.js';
import { serviceClients } from './scenarios/rooms.js';

const arg = (name, fallback) => {
  const found = process.argv.find((a) => a.startsWith(`--${name}=`));
  return found ? Number(found.slice(name.length + 3)) : fallback;
};
const roomSize = arg('room-size', 10);
const rooms = arg('rooms', 10);
const rate = arg('rate', 800);
const seconds = arg('seconds', 10);

pinSelf();
const tmp = mkdtempSync(join(tmpdir(), 'ams-profile-'));
const profileDir = join('bench', 'results', 'profiles');
mkdirSync(profileDir, { recursive: true });
const before = new Set(readdirSync(profileDir));
const jwtSecret = newJwtSecret();
const service = await startService({ name: `profile-rooms${roomSize}`, databaseUrl: `sqlite:${join(tmp, 'p.sqlite')}`, jwtSecret, profileDir });
const set = await serviceClients(service, { rooms, roomSize, mint: jwtMinter(jwtSecret) });
const load = new RoomLoad({ ...set, serverCpu: () => service.proc.cpu() });
await load.step({ rate: rate / 2, durationMs: 2000 }); // warm-up
const result = await load.step({ rate, durationMs: seconds * 1000 });
console.log(`${rate} msg/s in rooms of ${roomSize}: ${describe(result)}`);
console.log(`server CPU per message: ${((result.serverCpu * 1000) / rate).toFixed(3)} ms`);
for (const c of set.clients) c.close();
await service.proc.stop();
rmSync(tmp, { recursive: true, force: true });
const file = readdirSync(profileDir).find((f) => !before.has(f));
if (file) {
  console.log(execFileSync(process.execPath, ['bench/profile-summary.js', join(profileDir, file), '40'], { encoding: 'utf8' }));
}
process.exit(0);
