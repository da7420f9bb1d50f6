import { join } from 'node:path';
import { alternate, cannon } from '../lib/http-load.js';
import { jwtMinter, startService } from '../lib/service.js';
import { combine } from './history.js';

const MCP_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' };
const toolCall = (name, args) => JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } });

/**
 * Scenario 11 (issue 19): MCP tool calls per second for `send_message` and `read_messages` against
 * the same operations over REST, in one run, on one service. REST carries a session JWT; MCP the
 * API token, as an MCP client does (its Argon2id verification cached after the first call). Each
 * MCP call is what a stateless client sends: one POST /mcp with a `tools/call`.
 */
export async function mcpScenario(bench) {
  const { quick, tmp, log } = bench;
  const mint = jwtMinter(bench.jwtSecret);
  const service = await startService({ name: 'service-mcp', databaseUrl: `sqlite:${join(tmp, 'mcp.sqlite')}`, jwtSecret: bench.jwtSecret, profileDir: bench.profileDir });
  try {
    const admin = await service.api.createAgent('admin');
    const member = await service.api.createAgent('agent');
    const room = await service.api.createRoom(admin.id, [member.id]);
    const rest = { authorization: `Bearer ${mint(member.id)}`, 'content-type': 'application/json' };
    const mcp = { ...MCP_HEADERS, authorization: `Bearer ${(await service.api.issueToken(member.id)).token}` };
    const body = 'a message of an ordinary length for an agent to send '.padEnd(140, 'x');
    for (let i = 0; i < 50; i++) await service.api.expect(201, 'POST', `/api/v1/rooms/${room.id}/messages`, { body: { body }, headers: rest });

    const targets = {
      'rest send': { url: `${service.url}/api/v1/rooms/${room.id}/messages`, method: 'POST', headers: rest, body: JSON.stringify({ body }) },
      'mcp send': { url: `${service.url}/mcp`, method: 'POST', headers: mcp, body: toolCall('send_message', { room: room.id, body }) },
      'rest read': { url: `${service.url}/api/v1/rooms/${room.id}/messages?limit=20`, method: 'GET', headers: rest },
      'mcp read': { url: `${service.url}/mcp`, method: 'POST', headers: mcp, body: toolCall('read_messages', { room: room.id, limit: 20 }) },
    };
    // Each answers what it should (an MCP tool failure would still be a 200).
    for (const [name, t] of Object.entries(targets)) {
      const res = await fetch(t.url, { method: t.method, headers: t.headers, body: t.body });
      const answer = await res.json();
      const ok = name.startsWith('mcp') ? res.status === 200 && answer.result && !answer.result.isError : res.status < 300;
      if (!ok) throw new Error(`${name}: ${res.status} ${JSON.stringify(answer).slice(0, 300)}`);
    }

    const seconds = quick ? 1 : 4;
    const rounds = quick ? 1 : 3;
    for (const t of Object.values(targets)) await cannon({ ...t, durationSeconds: 1 }); // warm-up (JIT, the token's verification)
    const runs = await alternate(Object.keys(targets), rounds, async (name) => {
      const cpu0 = service.proc.cpu();
      const r = await cannon({ ...targets[name], durationSeconds: seconds });
      r.cpuMsPerRequest = cpu0 === null ? null : Math.round(((service.proc.cpu() - cpu0) * 1e6) / (r.ok + r.non2xx)) / 1000;
      log(`${name.padEnd(10)} ${r.rps} req/s  p50 ${r.p50} ms  p99 ${r.p99} ms  cpu ${r.cpuMsPerRequest} ms/req  non-2xx ${r.non2xx}  errors ${r.errors}`);
      return r;
    });
    const result = Object.fromEntries(Object.entries(runs).map(([name, r]) => [name, combine(r)]));
    for (const [name, r] of Object.entries(result)) if (r.non2xx > 0 || r.errors > 0) throw new Error(`${name}: ${r.non2xx} non-2xx, ${r.errors} errors`);
    return {
      connections: 16,
      secondsPerRound: seconds,
      send: { rest: result['rest send'], mcp: result['mcp send'], ratio: result['mcp send'].rps / result['rest send'].rps },
      read: { rest: result['rest read'], mcp: result['mcp read'], ratio: result['mcp read'].rps / result['rest read'].rps },
    };
  } finally {
    await service.proc.stop();
  }
}
