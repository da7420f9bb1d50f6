#!/usr/bin/env node
/**
 * `npm run bench [-- --quick] [-- --only=1,3] [-- --profile]`
 *
 * Runs the benchmark scenarios (docs/benchmarks.md) against the built service (`dist/main.js`) and the
 * baselines started here, in the same run, prints the table of ratios and writes the results as
 * JSON to bench/results/. `--quick` runs every scenario briefly (the CI smoke test: it completes
 * and prints the table; targets are reported, not enforced). `--profile` starts the service with
 * `--cpu-prof` and keeps the profiles in bench/results/profiles/.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { machineInfo, pinSelf, pinning } from './lib/processes.js';
import { printTable, summaryRows } from './lib/report.js';
import { newJwtSecret } from './lib/service.js';
import { activityScenario } from './scenarios/activity.js';
import { attentionInboxScenario } from './scenarios/attention-inbox.js';
import { busyDiskScenario } from './scenarios/busydisk.js';
import { catchupScenario } from './scenarios/catchup.js';
import { clusterScenario } from './scenarios/cluster.js';
import { fanoutScenario } from './scenarios/fanout.js';
import { filesScenario } from './scenarios/files.js';
import { historyScenario } from './scenarios/history.js';
import { hostileBodiesScenario } from './scenarios/hostile-bodies.js';
import { idleScenario } from './scenarios/idle-connections.js';
import { inboxScenario } from './scenarios/inbox.js';
import { mcpScenario } from './scenarios/mcp.js';
import { memoryScenario } from './scenarios/memory.js';
import { pgSendScenario } from './scenarios/pgsend.js';
import { roomsScenario } from './scenarios/rooms.js';
import { searchScenario } from './scenarios/search.js';
import { sendersScenario } from './scenarios/senders.js';
import { spreadScenario } from './scenarios/spread.js';
import { sessionsScenario } from './scenarios/sessions.js';
import { taskWaitersScenario } from './scenarios/task-waiters.js';
import { a2aScenario } from './scenarios/a2a.js';
import { tasksScenario } from './scenarios/tasks.js';
import { webhooksFairnessScenario } from './scenarios/webhooks-fairness.js';

const SCENARIOS = [
  { id: 'rooms10', n: 1, title: 'message:send in rooms of 10', run: (b) => roomsScenario(b, { id: 'rooms10', roomSize: 10, rooms: 10, startRate: 400, ceiling: true }) },
  // Scenario 1 beside a service with 10 webhook endpoints registered: default mode offline (every agent is
  // connected, so nothing is sent); BENCH_WEBHOOK_MODE=always delivers every message to them.
  { id: 'rooms10-webhooks', n: 14, title: 'message:send in rooms of 10, with and without 10 webhook endpoints', run: (b) => roomsScenario(b, { id: 'rooms10-webhooks', roomSize: 10, rooms: 10, startRate: 400, webhooks: { count: 10, mode: process.env.BENCH_WEBHOOK_MODE ?? 'offline' } }) },
  { id: 'rooms10-data', n: 18, title: 'message:send in rooms of 10, with and without data of 1 KiB on every message', run: (b) => roomsScenario(b, { id: 'rooms10-data', roomSize: 10, rooms: 10, startRate: 400, data: { bytes: 1024 } }) },
  { id: 'rooms100', n: 2, title: 'message:send in rooms of 100', run: (b) => roomsScenario(b, { id: 'rooms100', roomSize: 100, rooms: 2, startRate: 60 }) },
  { id: 'history', n: 3, title: 'REST history pages of 50', run: historyScenario },
  { id: 'sessions', n: 4, title: 'POST /api/v1/sessions storm', run: sessionsScenario },
  { id: 'memory', n: 5, title: 'memory per idle WebSocket connection', run: memoryScenario },
  { id: 'cluster', n: 6, title: 'two nodes with Redis', run: clusterScenario },
  { id: 'hostile', n: 7, title: 'hostile bodies without credentials', run: hostileBodiesScenario },
  { id: 'search', n: 8, title: 'message search over 200,000 messages (SQLite, then PostgreSQL)', run: searchScenario },
  { id: 'catchup', n: 9, title: 'room:sync replay of 100,000 missed messages', run: catchupScenario },
  { id: 'inbox', n: 10, title: '2,000 held inbox long-polls woken by a message', run: inboxScenario },
  { id: 'mcp', n: 11, title: 'MCP tool calls against the same operations over REST', run: mcpScenario },
  { id: 'busydisk', n: 12, title: 'room of 10 at 1,000 msg/s, quiet and busy disk', run: busyDiskScenario },
  { id: 'senders', n: 13, title: 'one room, one or two sending connections', run: sendersScenario },
  { id: 'webhooks-fairness', n: 15, title: 'a healthy webhook endpoint beside 80, then 1,000 that never answer, and without them', run: webhooksFairnessScenario },
  { id: 'pgsend', n: 16, title: 'message:send on PostgreSQL against SQLite and R3 on PostgreSQL, rooms of 10 and 100, 1-2 senders', run: pgSendScenario },
  { id: 'files', n: 19, title: 'upload and download of a 10 MiB file against a bare streaming route (SQLite, PostgreSQL); RSS during 10 concurrent uploads', run: filesScenario },
  // Scenario 1 beside a service whose messages carry mentions (10 %) and replies (10 %): the ratio of its ratio to R1 to scenario 1's.
  { id: 'rooms10-mentions', n: 20, title: 'message:send in rooms of 10, with and without mentions and replies on 10 % each', run: (b) => roomsScenario(b, { id: 'rooms10-mentions', roomSize: 10, rooms: 10, startRate: 400, conversation: { mentions: 0.1, replies: 0.1 } }) },
  { id: 'attention-inbox', n: 21, title: '2,000 held attention inbox long-polls, a message mentioning 10 of them', run: attentionInboxScenario },
  { id: 'activity', n: 22, title: '200 agents in rooms of 10 setting typing every second: CPU', run: activityScenario },
  { id: 'tasks', n: 23, title: 'a task round trip (create, task:updated, working, completed, the held GET) against a message:send round trip and the same shape in plain messages', run: tasksScenario },
  { id: 'task-waiters', n: 24, title: '2,000 held GET /api/v1/tasks?as=assignee&state=submitted&wait=30, a new task waking its assignee; memory per waiter against the inbox\'s', run: taskWaitersScenario },
  { id: 'a2a', n: 25, title: 'A2A SendMessage answering once submitted against REST POST /api/v1/tasks, and the SDK\'s ceiling on a bare route', run: a2aScenario },
  { id: 'fanout', n: 26, title: 'three nodes, rooms whose members are all on node A: CPU of B and C per message as a share of A\'s', run: fanoutScenario },
  { id: 'spread', n: 27, title: 'two nodes, rooms of 10 with members and senders on both, against one node on the same PostgreSQL: CPU of every process per message, delivery p50', run: spreadScenario },
  { id: 'idle', n: 17, title: 'as many idle authenticated connections as the file limit allows, then a room-of-10 step while held', run: idleScenario },
];

function parseArgs(argv) {
  const args = { quick: false, only: null, profile: false, out: null, compareDist: null };
  for (const arg of argv) {
    if (arg === '--quick') args.quick = true;
    else if (arg === '--profile') args.profile = true;
    else if (arg.startsWith('--only=')) args.only = arg.slice('--only='.length).split(',').map((s) => s.trim());
    else if (arg.startsWith('--out=')) args.out = arg.slice('--out='.length);
    // Scenarios 1 and 2 also run another build (its dist/), interleaved: e.g. a worktree of an older commit.
    else if (arg.startsWith('--compare-dist=')) args.compareDist = arg.slice('--compare-dist='.length);
    else if (arg === '--help' || arg === '-h') {
      console.log('usage: npm run bench -- [--quick] [--only=1,2,rooms10,...] [--profile] [--out=file.json] [--compare-dist=../other/dist]');
      process.exit(0);
    } else {
      console.error(`unknown argument ${arg} (try --help)`);
      process.exit(2);
    }
  }
  return args;
}

function gitInfo() {
  const git = (...a) => {
    try {
      return execFileSync('git', a, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    } catch {
      return null;
    }
  };
  return { commit: git('rev-parse', 'HEAD'), branch: git('rev-parse', '--abbrev-ref', 'HEAD'), dirty: (git('status', '--porcelain', '--untracked-files=no') ?? '') !== '' };
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  if (!existsSync(join('dist', 'main.js'))) {
    console.error('dist/main.js is missing: run `npm run build` first (npm run bench does)');
    process.exit(2);
  }
  const machine = machineInfo(); // before pinning: availableParallelism() follows the affinity
  pinSelf();
  const started = new Date();
  const resultsDir = join('bench', 'results');
  mkdirSync(resultsDir, { recursive: true });
  const profileDir = args.profile ? join(resultsDir, 'profiles') : undefined;
  if (profileDir) mkdirSync(profileDir, { recursive: true });
  const tmp = mkdtempSync(join(tmpdir(), 'ams-bench-'));

  console.log(`ams bench (${args.quick ? 'quick' : 'full'}): ${machine.cpus} CPU ${machine.cpuModel}, node ${machine.node}, load ${machine.loadAverage.join(' ')}`);
  console.log(pinning.enabled ? `pinning: servers on CPU ${pinning.serverCpu}, load generator on CPU ${pinning.generatorCpu}` : `pinning: off (${pinning.reason})`);

  const bench = { quick: args.quick, tmp, profileDir, compareDist: args.compareDist, jwtSecret: newJwtSecret(), log: (line) => console.log(`  ${line}`) };
  const results = {};
  let crashed = false;
  const selected = SCENARIOS.filter((s) => args.only === null || args.only.includes(String(s.n)) || args.only.includes(s.id));
  for (const scenario of selected) {
    console.log(`\n[${scenario.n}] ${scenario.title}`);
    const t0 = Date.now();
    try {
      results[scenario.id] = await scenario.run(bench);
    } catch (err) {
      crashed = true;
      console.error(`  scenario ${scenario.id} failed: ${err.stack ?? err}`);
      results[scenario.id] = { error: `scenario failed: ${err.message}` };
    }
    results[scenario.id].elapsedSeconds = Math.round((Date.now() - t0) / 100) / 10;
    console.log(`  (${results[scenario.id].elapsedSeconds} s)`);
  }

  const finished = new Date();
  const summary = summaryRows(results);
  const report = {
    kind: args.quick ? 'quick' : 'full',
    startedAt: started.toISOString(),
    finishedAt: finished.toISOString(),
    elapsedSeconds: Math.round((finished - started) / 1000),
    machine: { ...machine, loadAverageAfter: machineInfo().loadAverage },
    git: gitInfo(),
    summary,
    scenarios: results,
  };
  console.log('');
  printTable(summary);
  const out = args.out ?? join(resultsDir, `${started.toISOString().replace(/[:.]/g, '-')}${args.quick ? '-quick' : ''}.json`);
  writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`);
  console.log(`\nresults: ${out} (${report.elapsedSeconds} s)`);
  rmSync(tmp, { recursive: true, force: true });
  // Exit code: the harness worked (0) or a scenario crashed (1). Targets are reported, not enforced.
  process.exit(crashed ? 1 : 0);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
