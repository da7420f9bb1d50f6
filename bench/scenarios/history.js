import { join } from 'node:path';
import { alternate, cannon, combine } from '../lib/http-load.js';
import { jwtMinter, startBaseline, startService } from '../lib/service.js';


/**
 * Scenario 3: `GET /api/v1/rooms/:id/messages?limit=50` (authenticated, the service's whole REST
 * path) against a bare Fastify route serving the same page from the same table, with autocannon.
 */
export async function historyScenario(bench) {
  const { quick, tmp, log } = bench;
  const dbPath = join(tmp, 'history.sqlite');
  const mint = jwtMinter(bench.jwtSecret);
  const procs = [];
  try {
    const service = await startService({ name: 'service-history', databaseUrl: `sqlite:${dbPath}`, jwtSecret: bench.jwtSecret, profileDir: bench.profileDir });
    procs.push(service.proc);
    const admin = await service.api.createAgent('admin');
    const member = await service.api.createAgent('agent');
    const room = await service.api.createRoom(admin.id, [member.id]);
    const jwt = mint(member.id);

    // History to page through, written through the service itself.
    const total = quick ? 300 : 2000;
    let next = 0;
    const writer = async () => {
      while (next < total) {
        const i = next++;
        await service.api.expect(201, 'POST', `/api/v1/rooms/${room.id}/messages`, {
          body: { body: `history message ${i} `.padEnd(140, 'x') },
          headers: { authorization: `Bearer ${jwt}` },
        });
      }
    };
    await Promise.all(Array.from({ length: 8 }, writer));

    const bare = await startBaseline({ name: 'bare-history', script: 'bench/baselines/bare-history.js', env: { BARE_DB: dbPath } });
    procs.push(bare.proc);

    // The two answer the same page.
    const svcPage = await service.api.expect(200, 'GET', `/api/v1/rooms/${room.id}/messages?limit=50`, { headers: { authorization: `Bearer ${jwt}` } });
    const barePage = await (await fetch(`${bare.url}/rooms/${room.id}/messages?limit=50`)).json();
    const ids = (page) => page.messages.map((m) => m.id).join(',');
    if (svcPage.messages.length !== 50 || ids(svcPage) !== ids(barePage) || svcPage.nextCursor !== barePage.nextCursor) {
      throw new Error('the bare route and the service disagree on the first page');
    }

    const urls = {
      service: { url: `${service.url}/api/v1/rooms/${room.id}/messages?limit=50`, headers: { authorization: `Bearer ${jwt}` } },
      bare: { url: `${bare.url}/rooms/${room.id}/messages?limit=50`, headers: {} },
    };
    const procOf = { service: service.proc, bare: bare.proc };
    const seconds = quick ? 1 : 4;
    const rounds = quick ? 1 : 3;
    for (const t of ['bare', 'service']) await cannon({ ...urls[t], durationSeconds: 1 }); // warm-up
    const runs = await alternate(['bare', 'service'], rounds, async (t) => {
      const cpu0 = procOf[t].cpu();
      const r = await cannon({ ...urls[t], durationSeconds: seconds });
      // Server CPU per request: much less sensitive than req/s to other load on the machine.
      r.cpuMsPerRequest = cpu0 === null ? null : Math.round(((procOf[t].cpu() - cpu0) * 1e6) / (r.ok + r.non2xx)) / 1000;
      log(`${t.padEnd(8)} ${r.rps} req/s  p50 ${r.p50} ms  p99 ${r.p99} ms  cpu ${r.cpuMsPerRequest} ms/req  non-2xx ${r.non2xx}  errors ${r.errors}`);
      return r;
    });
    const svc = combine(runs.service);
    const bareResult = combine(runs.bare);
    if (svc.non2xx > 0 || svc.errors > 0) throw new Error(`the service answered ${svc.non2xx} non-2xx and had ${svc.errors} errors`);
    return { messagesInRoom: total, pageSize: 50, connections: 16, secondsPerRound: seconds, service: svc, bare: bareResult, ratio: svc.rps / bareResult.rps };
  } finally {
    for (const p of procs) await p.stop();
  }
}
