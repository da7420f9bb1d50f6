import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cannon, cannonRounds } from '../lib/http-load.js';
import { jwtMinter, startBaseline, startService } from '../lib/service.js';

const MCP_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' };
const toolCall = (name, args) => JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } });

/**
 * Scenario 11: MCP tool calls per second for `send_message` and `read_messages` against
 * the same operations over REST, in one run, on one service. REST carries a session JWT; MCP the
 * API token, as an MCP client does (its Argon2id verification cached after the first call). Each
 * MCP call is what a stateless client sends: one POST /mcp with a `tools/call`.
 *
 * In the same run, the ceiling: a bare Fastify server (bench/baselines/bare-mcp.js) answering the
 * service's own answers, captured here, over REST and through the SDK's transport set up as
 * /mcp does, with no authentication and no database. Its MCP/REST ratio is what the SDK allows.
 */
/** MCP against REST for one operation, on the service or (prefix 'bare ') on the bare server. */
const compare = (result, op, prefix = '') => {
  const rest = result[`${prefix}rest ${op}`];
  const mcp = result[`${prefix}mcp ${op}`];
  return { rest, mcp, ratio: mcp.rps / rest.rps };
};

export async function mcpScenario(bench) {
  const { quick, tmp, log } = bench;
  const mint = jwtMinter(bench.jwtSecret);
  let bare = null;
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

    // The bare server answers the same bodies: the REST answers and the tool results, as captured.
    const answer = async (t) => (await fetch(t.url, { method: t.method, headers: t.headers, body: t.body })).json();
    const fixture = {
      read: { rest: await answer(targets['rest read']), tool: (await answer(targets['mcp read'])).result },
      send: { rest: await answer(targets['rest send']), tool: (await answer(targets['mcp send'])).result },
    };
    const fixturePath = join(tmp, 'bare-mcp.json');
    writeFileSync(fixturePath, JSON.stringify(fixture));
    bare = await startBaseline({ name: 'bare-mcp', script: 'bench/baselines/bare-mcp.js', env: { BARE_MCP_FIXTURE: fixturePath }, profileDir: bench.profileDir });
    Object.assign(targets, {
      'bare rest send': { url: `${bare.url}/send`, method: 'POST', headers: { 'content-type': 'application/json' }, body: targets['rest send'].body },
      'bare mcp send': { url: `${bare.url}/mcp`, method: 'POST', headers: MCP_HEADERS, body: targets['mcp send'].body },
      'bare rest read': { url: `${bare.url}/read`, method: 'GET', headers: {} },
      'bare mcp read': { url: `${bare.url}/mcp`, method: 'POST', headers: MCP_HEADERS, body: targets['mcp read'].body },
    });
    for (const name of ['bare mcp send', 'bare mcp read']) {
      const { result } = await answer(targets[name]);
      if (JSON.stringify(result) !== JSON.stringify(fixture[name.slice(-4)].tool)) throw new Error(`${name}: not the service's answer`);
    }

    const seconds = quick ? 1 : 4;
    const rounds = quick ? 1 : 3;
    for (const t of Object.values(targets)) await cannon({ ...t, durationSeconds: 1 }); // warm-up (JIT, the token's verification)
    const result = await cannonRounds(targets, { rounds, seconds, procOf: (name) => (name.startsWith('bare') ? bare.proc : service.proc), log });
    return {
      connections: 16,
      secondsPerRound: seconds,
      send: { ...compare(result, 'send'), bare: compare(result, 'send', 'bare ') },
      read: { ...compare(result, 'read'), bare: compare(result, 'read', 'bare ') },
    };
  } finally {
    await bare?.proc.stop();
    await service.proc.stop();
  }
}
