import type { ChildProcessWithoutNullStreams } from 'node:child_process';

export interface SpawnOptions {
  /** For messages. */
  name?: string;
  /** The program and its arguments, e.g. [process.execPath, 'dist/main.js']. */
  argv: string[];
  /** The whole environment of the child (nothing is inherited unless passed). */
  env: Record<string, string | undefined>;
  cwd?: string;
  /** How many lines of output (and parsed JSON log lines) are kept; 1000 by default. */
  keepLines?: number;
}

export interface ProcessExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The kept lines of stdout, joined. */
  stdout: string;
  /** The kept lines of stderr, joined. */
  stderr: string;
}

export type LogLine = Record<string, unknown>;

export interface SpawnedProcess {
  readonly name: string;
  readonly child: ChildProcessWithoutNullStreams;
  readonly pid: number | undefined;
  /** Resolves once the process has ended and all of its output was read. */
  readonly exit: Promise<ProcessExit>;
  /** True while the process runs. */
  alive(): boolean;
  /** The kept lines of one stream, or of both in the order they came. */
  output(stream?: 'stdout' | 'stderr'): string;
  /** The first JSON line on stdout that satisfies `predicate`, seen before or after the call. Rejects when the process exits first or after `timeoutMs` (60 s). */
  waitForLog(predicate: (line: LogLine) => boolean, timeoutMs?: number): Promise<LogLine>;
  /** Sends `signal` (SIGKILL by default) unless it has ended, and waits for the exit. */
  kill(signal?: NodeJS.Signals): Promise<ProcessExit>;
  /** SIGTERM, then SIGKILL after `graceMs` (10 s). */
  stop(graceMs?: number): Promise<ProcessExit>;
}

export function spawnProcess(options: SpawnOptions): SpawnedProcess;

export interface RunOptions extends Pick<SpawnOptions, 'argv' | 'env' | 'cwd'> {
  /** Killed, and the promise rejected, after this long; 120 s by default. */
  timeoutMs?: number;
}

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** All of stdout, exactly. */
  stdout: string;
  /** All of stderr, exactly. */
  stderr: string;
}

export function runProcess(options: RunOptions): Promise<RunResult>;
