import { readFileSync } from 'node:fs';

/**
 * The Redis presence scripts, one `.lua` file each under `lua/` (the build copies them next to the
 * compiled module: scripts/copy-assets.js), read once when this module loads. Each script is sent
 * as `prelude.lua` (shared helpers; ARGV[1] is the key base) followed by its own text.
 */
const SCRIPT_FILES = {
  connect: 'connect.lua',
  disconnect: 'disconnect.lua',
  join: 'join.lua',
  leave: 'leave.lua',
  joinAll: 'join-all.lua',
  leaveAll: 'leave-all.lua',
  heartbeat: 'heartbeat.lua',
  sweep: 'sweep.lua',
  deregister: 'deregister.lua',
} as const;

export type ScriptName = keyof typeof SCRIPT_FILES;

const read = (file: string): string => readFileSync(new URL(`./lua/${file}`, import.meta.url), 'utf8');

const prelude = read('prelude.lua');

export const PRESENCE_SCRIPTS = Object.fromEntries(
  Object.entries(SCRIPT_FILES).map(([name, file]) => [name, `${prelude}\n${read(file)}`]),
) as Record<ScriptName, string>;
