import { request } from 'node:http';
import { join } from 'node:path';
import { createDatabase } from '../lib/postgres.js';
import { rssBytes } from '../lib/processes.js';
import { jwtMinter, startBaseline, startService } from '../lib/service.js';

/**
 * Scenario 19 (docs/benchmarks.md): upload and download of a 10 MiB file through the service
 * (`POST /api/v1/files`, `GET /api/v1/files/:id`) against a bare Fastify route that streams the same
 * bytes into the same storage kind (bench/baselines/bare-files.js), alternately, on SQLite and then
 * PostgreSQL; and the service's RSS growth during 10 concurrent uploads of 10 MiB.
 */
const MiB = 1024 * 1024;
const FILE_BYTES = 10 * MiB;

/** One HTTP exchange with a body sent in 64 KiB writes (as a streaming client does); resolves with the status, the answer's size and its text when small. */
function exchange(url, { method, headers = {}, body }) {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers: body ? { ...headers, 'content-length': String(body.length) } : headers }, (res) => {
      let size = 0;
      const small = [];
      res.on('data', (piece) => {
        size += piece.length;
        if (size <= 4096) small.push(piece);
      });
      res.on('end', () => resolve({ status: res.statusCode, size, text: Buffer.concat(small).toString() }));
      res.on('error', reject);
    });
    req.on('error', reject);
    if (body) {
      let offset = 0;
      const write = () => {
        while (offset < body.length) {
          const piece = body.subarray(offset, offset + 64 * 1024);
          offset += piece.length;
          if (!req.write(piece)) {
            req.once('drain', write);
            return;
          }
        }
        req.end();
      };
      write();
    } else req.end();
  });
}

const mibPerSecond = (bytes, ms) => Math.round((bytes / MiB / (ms / 1000)) * 10) / 10;

async function timed(work) {
  const t0 = performance.now();
  const result = await work();
  return { ms: performance.now() - t0, result };
}

/** MiB/s of `rounds` uploads then downloads on each side, alternating service and bare. */
async function compare({ service, bare, jwt, rounds, log, engine }) {
  const body = Buffer.alloc(FILE_BYTES, 7);
  const auth = { authorization: `Bearer ${jwt}`, 'content-type': 'application/octet-stream' };
  const sides = {
    service: {
      upload: () => exchange(`${service.url}/api/v1/files?name=bench.bin`, { method: 'POST', headers: auth, body }),
      download: (id) => exchange(`${service.url}/api/v1/files/${id}`, { method: 'GET', headers: auth }),
    },
    bare: {
      upload: () => exchange(`${bare.url}/files`, { method: 'POST', headers: { 'content-type': 'application/octet-stream' }, body }),
      download: (id) => exchange(`${bare.url}/files/${id}`, { method: 'GET' }),
    },
  };
  const totals = { service: { up: 0, down: 0 }, bare: { up: 0, down: 0 } };
  for (let round = 0; round <= rounds; round++) {
    for (const side of ['service', 'bare']) {
      const up = await timed(sides[side].upload);
      if (up.result.status !== 201) throw new Error(`${engine} ${side} upload: ${up.result.status} ${up.result.text}`);
      const id = JSON.parse(up.result.text).id;
      const down = await timed(() => sides[side].download(id));
      if (down.result.status !== 200 || down.result.size !== FILE_BYTES) throw new Error(`${engine} ${side} download: ${down.result.status}, ${down.result.size} bytes`);
      if (round === 0) continue; // warm-up
      totals[side].up += up.ms;
      totals[side].down += down.ms;
    }
  }
  const rate = (side, op) => mibPerSecond(FILE_BYTES * rounds, totals[side][op]);
  const out = {
    upload: { service: rate('service', 'up'), bare: rate('bare', 'up') },
    download: { service: rate('service', 'down'), bare: rate('bare', 'down') },
  };
  out.upload.ratio = Math.round((out.upload.service / out.upload.bare) * 100) / 100;
  out.download.ratio = Math.round((out.download.service / out.download.bare) * 100) / 100;
  log(`${engine}: upload ${out.upload.service} MiB/s vs bare ${out.upload.bare} (x${out.upload.ratio}); download ${out.download.service} vs ${out.download.bare} (x${out.download.ratio})`);
  return out;
}

/** A process's RSS before and at its peak while 10 uploads of 10 MiB to `url` run at once. */
async function concurrentRss({ proc, url, headers, log, label }) {
  const body = Buffer.alloc(FILE_BYTES, 3);
  const before = rssBytes(proc.pid);
  let peak = before ?? 0;
  const sampler = setInterval(() => {
    peak = Math.max(peak, rssBytes(proc.pid) ?? 0);
  }, 20);
  const { ms, result } = await timed(() => Promise.all(Array.from({ length: 10 }, () => exchange(url, { method: 'POST', headers, body }))));
  clearInterval(sampler);
  if (result.some((r) => r.status !== 201)) throw new Error(`${label}: ${result.map((r) => r.status).join(',')}`);
  const growthMiB = before === null ? null : Math.round(((peak - before) / MiB) * 10) / 10;
  log(`${label}: 10 concurrent uploads of 10 MiB in ${Math.round(ms)} ms; RSS ${before === null ? '?' : Math.round(before / MiB)} MiB before, growth ${growthMiB} MiB at the peak`);
  return { rssBeforeMiB: before === null ? null : Math.round(before / MiB), rssGrowthMiB: growthMiB, seconds: Math.round(ms) / 1000 };
}

async function onEngine(bench, engine, databaseUrl, bareDbUrl) {
  const mint = jwtMinter(bench.jwtSecret);
  const service = await startService({ name: `service-files-${engine}`, databaseUrl, jwtSecret: bench.jwtSecret, profileDir: bench.profileDir });
  let bare = null;
  try {
    bare = await startBaseline({ name: `bare-files-${engine}`, script: 'bench/baselines/bare-files.js', env: { BARE_DB: bareDbUrl }, profileDir: bench.profileDir });
    const agent = await service.api.createAgent('agent');
    const jwt = mint(agent.id);
    // First, on processes that have not yet moved a file: the RSS growth is the uploads' own.
    const headers = { authorization: `Bearer ${jwt}`, 'content-type': 'application/octet-stream' };
    const rss = await concurrentRss({ proc: service.proc, url: `${service.url}/api/v1/files?name=c.bin`, headers, log: bench.log, label: `${engine} service` });
    const bareRss = await concurrentRss({ proc: bare.proc, url: `${bare.url}/files`, headers, log: bench.log, label: `${engine} bare` });
    const rates = await compare({ service, bare, jwt, rounds: bench.quick ? 1 : 5, log: bench.log, engine });
    return { ...rates, concurrent: { ...rss, bare: bareRss } };
  } finally {
    await bare?.proc.stop();
    await service.proc.stop();
  }
}

export async function filesScenario(bench) {
  const result = { fileMiB: FILE_BYTES / MiB };
  result.sqlite = await onEngine(bench, 'sqlite', `sqlite:${join(bench.tmp, 'files.sqlite')}`, `sqlite:${join(bench.tmp, 'bare-files.sqlite')}`);
  const serviceDb = await createDatabase();
  const bareDb = serviceDb.error ? null : await createDatabase();
  if (serviceDb.error || bareDb?.error) {
    result.postgres = { error: serviceDb.error ?? bareDb.error };
    bench.log(`postgres: skipped (${result.postgres.error})`);
  } else {
    try {
      result.postgres = await onEngine(bench, 'postgres', serviceDb.url, bareDb.url);
    } finally {
      await serviceDb.drop();
      await bareDb.drop();
    }
  }
  return result;
}
