import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cannon, cannonRounds } from '../lib/http-load.js';
import { jwtMinter, startBaseline, startService } from '../lib/service.js';

const A2A_HEADERS = { 'content-type': 'application/json', 'a2a-version': '1.0' };

/**
 * Scenario 25 (docs/benchmarks.md): an A2A `SendMessage` that answers once the task is submitted
 * (`configuration.returnImmediately`), against REST `POST /api/v1/tasks` making the same task, in
 * alternating rounds on one service, closed loop over 16 connections. Every request is a new task:
 * the A2A `messageId` (the task's clientTaskId) is new each time. Target: A2A at least 0.6 x REST.
 *
 * In the same run, the ceiling the SDK sets: a bare Fastify server (bench/baselines/bare-a2a.js)
 * answering the service's own answers captured here, over REST and through the SDK's JSON-RPC
 * transport handler, with no authentication and no database. Its A2A/REST ratio is what the SDK allows.
 */
export async function a2aScenario(bench) {
  const { quick, tmp, log } = bench;
  const mint = jwtMinter(bench.jwtSecret);
  let bare = null;
  const service = await startService({ name: 'service-a2a', databaseUrl: `sqlite:${join(tmp, 'a2a.sqlite')}`, jwtSecret: bench.jwtSecret, profileDir: bench.profileDir });
  try {
    const [requester, assignee] = await service.api.createAgents(2);
    const headers = { authorization: `Bearer ${mint(requester.id)}` };
    let n = 0;
    const restBody = () => JSON.stringify({ assignee: assignee.id, title: 'Summarise the logs', input: { body: 'Summarise the logs of the night' } });
    const a2aBody = () => JSON.stringify({
      jsonrpc: '2.0', id: ++n, method: 'SendMessage',
      params: { message: { messageId: `bench-${process.pid}-${n}`, role: 'ROLE_USER', parts: [{ text: 'Summarise the logs\nof the night' }] }, configuration: { returnImmediately: true } },
    });
    const targets = {
      'rest create': { url: `${service.url}/api/v1/tasks`, method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, bodyOf: restBody },
      'a2a send': { url: `${service.url}/a2a/${assignee.name}`, method: 'POST', headers: { ...headers, ...A2A_HEADERS }, bodyOf: a2aBody },
    };
    // Each answers what it should, and the bare server answers the same bodies.
    const once = async (t) => {
      const res = await fetch(t.url, { method: t.method, headers: t.headers, body: t.bodyOf() });
      return { status: res.status, body: await res.json() };
    };
    const rest = await once(targets['rest create']);
    if (rest.status !== 201) throw new Error(`rest create: ${rest.status} ${JSON.stringify(rest.body).slice(0, 300)}`);
    const a2a = await once(targets['a2a send']);
    if (a2a.status !== 200 || a2a.body.result?.task?.status?.state !== 'TASK_STATE_SUBMITTED') throw new Error(`a2a send: ${a2a.status} ${JSON.stringify(a2a.body).slice(0, 300)}`);
    const fixturePath = join(tmp, 'bare-a2a.json');
    writeFileSync(fixturePath, JSON.stringify({ rest: rest.body, a2a: a2a.body.result.task }));
    bare = await startBaseline({ name: 'bare-a2a', script: 'bench/baselines/bare-a2a.js', env: { BARE_A2A_FIXTURE: fixturePath }, profileDir: bench.profileDir });
    Object.assign(targets, {
      'bare rest': { url: `${bare.url}/tasks`, method: 'POST', headers: { 'content-type': 'application/json' }, bodyOf: restBody },
      'bare a2a': { url: `${bare.url}/a2a`, method: 'POST', headers: A2A_HEADERS, bodyOf: a2aBody },
    });
    const bareAnswer = await once(targets['bare a2a']);
    if (JSON.stringify(bareAnswer.body.result) !== JSON.stringify(a2a.body.result)) throw new Error(`bare a2a: not the service's answer: ${JSON.stringify(bareAnswer.body).slice(0, 300)}`);

    const seconds = quick ? 1 : 4;
    const rounds = quick ? 1 : 3;
    for (const t of Object.values(targets)) await cannon({ ...t, durationSeconds: 1 }); // warm-up (JIT, the direct room)
    const result = await cannonRounds(targets, { rounds, seconds, procOf: (name) => (name.startsWith('bare') ? bare.proc : service.proc), log });
    const ratio = result['a2a send'].rps / result['rest create'].rps;
    const bareRatio = result['bare a2a'].rps / result['bare rest'].rps;
    log(`A2A ${ratio.toFixed(2)} x REST (target >= 0.6); the SDK's ceiling: bare A2A ${bareRatio.toFixed(2)} x bare REST`);
    return {
      connections: 16,
      secondsPerRound: seconds,
      rest: result['rest create'], a2a: result['a2a send'], ratio,
      bare: { rest: result['bare rest'], a2a: result['bare a2a'], ratio: bareRatio },
      meetsTarget: ratio >= 0.6,
    };
  } finally {
    await bare?.proc.stop();
    await service.proc.stop();
  }
}
