import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { spawnProcess } from '../../test/helpers/processes.js';

/**
 * Child processes of the bench: the service, the baselines and the raw Argon2 probe. Servers run
 * pinned to one core and the load generator (this process) to another, when `taskset` exists and
 * the machine has two cores or more, so that neither steals the other's CPU.
 */
function detectPinning() {
  const cpus = os.availableParallelism();
  const probe = spawnSync('taskset', ['-V'], { stdio: 'ignore' });
  if (probe.error || probe.status !== 0) return { enabled: false, reason: 'taskset not found', cpus };
  if (cpus < 2) return { enabled: false, reason: 'fewer than 2 CPUs', cpus };
  return { enabled: true, generatorCpu: '0', serverCpu: String(cpus - 1), cpus };
}

export const pinning = detectPinning();

/** Pins every thread of this process (the load generator) to its core. */
export function pinSelf() {
  if (!pinning.enabled) return;
  spawnSync('taskset', ['-a', '-p', '-c', pinning.generatorCpu, String(process.pid)], { stdio: 'ignore' });
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

const CLOCK_TICKS = 100; // USER_HZ; Linux exposes 100 everywhere that matters

/** Resident set size of a process in bytes, from /proc (null where /proc is absent). */
export function rssBytes(pid) {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) * 1024 : null;
  } catch {
    return null;
  }
}

/** User and system CPU seconds of a process, all threads included (null where /proc is absent). */
export function cpuTimes(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { user: Number(fields[11]) / CLOCK_TICKS, system: Number(fields[12]) / CLOCK_TICKS };
  } catch {
    return null;
  }
}

/** User + system CPU seconds of a process, all threads included (null where /proc is absent). */
export function cpuSeconds(pid) {
  const times = cpuTimes(pid);
  return times === null ? null : times.user + times.system;
}

/** The CPU seconds of several processes together (several nodes of one service), null if any is unknown. */
export function summedCpu(procs) {
  return () => {
    let sum = 0;
    for (const proc of procs) {
      const seconds = proc.cpu();
      if (seconds === null) return null;
      sum += seconds;
    }
    return sum;
  };
}

/**
 * Starts `node <script>` pinned to the server core, through the tests' process harness (one
 * spawner for tests and bench). Output is kept (last lines only) to explain a crash; it is not
 * printed otherwise.
 * @param {{name: string, script: string, env?: Record<string,string>, nodeArgs?: string[], cwd?: string}} options
 */
export function startNode({ name, script, env = {}, nodeArgs = [], cwd = process.cwd() }) {
  const node = [process.execPath, ...nodeArgs, script];
  const proc = spawnProcess({
    name,
    argv: pinning.enabled ? ['taskset', '-c', pinning.serverCpu, ...node] : node,
    cwd,
    env: { ...process.env, ...env },
    keepLines: 30,
  });
  const exitCode = proc.exit.then(({ code, signal }) => code ?? signal);
  return {
    name,
    child: proc.child,
    get pid() {
      return proc.pid;
    },
    get exited() {
      return !proc.alive();
    },
    tail: () => proc.output().split('\n').map((line) => (line.length > 500 ? `${line.slice(0, 500)}...` : line)).join('\n'),
    rss: () => rssBytes(proc.pid),
    cpu: () => cpuSeconds(proc.pid),
    cpuTimes: () => cpuTimes(proc.pid),
    /** SIGTERM, then SIGKILL after a grace period; resolves with the exit code (or signal). */
    async stop(graceMs = 10_000) {
      await proc.stop(graceMs);
      return exitCode;
    },
    /** Resolves with the exit code; used for one-shot probes. */
    wait: () => exitCode,
  };
}

/** Polls `url` until it answers 200, or throws with the child's last output. */
export async function waitForHttp(proc, url, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (proc.exited) throw new Error(`${proc.name} exited during startup:\n${proc.tail()}`);
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
      await res.arrayBuffer();
      if (res.status === 200) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`${proc.name} did not answer ${url} within ${timeoutMs} ms:\n${proc.tail()}`);
    await sleep(100);
  }
}

/** One-minute load average and a short machine description for the results. */
export function machineInfo() {
  const cpus = os.cpus();
  return {
    cpuModel: cpus[0]?.model ?? 'unknown',
    cpus: os.availableParallelism(),
    memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    platform: `${os.type()} ${os.release()} ${os.arch()}`,
    node: process.version,
    loadAverage: os.loadavg().map((l) => Math.round(l * 100) / 100),
    pinning,
  };
}

/** PostgreSQL's shared background processes (their title after "postgres: [<cluster>: ]"). */
const PG_BACKGROUND = /^postgres: (?:\S+: )?(checkpointer|background writer|walwriter|autovacuum launcher|logical replication launcher|stats collector|archiver|io worker)/;

/**
 * CPU seconds of PostgreSQL's processes that serve one database, by pid: the backends connected to
 * it (their title names it) and the server's shared background processes (WAL writer, checkpointer,
 * ...), not other databases' backends. Sum the growth between two readings with `cpuGrowth`.
 */
export function postgresCpuByPid(database) {
  const byPid = new Map();
  let pids;
  try {
    pids = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return null;
  }
  for (const pid of pids) {
    let title;
    try {
      if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() !== 'postgres') continue;
      title = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
    } catch {
      continue; // gone meanwhile
    }
    // The postmaster (its title is its command line) forks the backends: counted too.
    const serves = title.includes(` ${database} `) || PG_BACKGROUND.test(title) || title.startsWith('/');
    const seconds = serves ? cpuSeconds(pid) : null;
    if (seconds !== null) byPid.set(pid, seconds);
  }
  return byPid;
}

/** CPU seconds spent between two `postgresCpuByPid` readings (a process that started between them counts whole). */
export function cpuGrowth(before, after) {
  let total = 0;
  for (const [pid, seconds] of after) total += seconds - (before.get(pid) ?? 0);
  return total;
}
