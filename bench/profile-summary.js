#!/usr/bin/env node
/**
 * `node bench/profile-summary.js <file.cpuprofile> [top]`: where the time of a `--cpu-prof`
 * profile goes: self time by function and by module (our src/, each npm package, node
 * internals, GC, idle), as percentages of the samples. Profiles come from `npm run bench -- --profile`.
 */
import { readFileSync } from 'node:fs';

const positional = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const perArg = process.argv.find((a) => a.startsWith('--per='));
// --per=<n>: also show microseconds per unit of work (e.g. per message sent during the profile).
const per = perArg ? Number(perArg.slice('--per='.length)) : null;
const [file, topArg] = positional;
if (!file) {
  console.error('usage: node bench/profile-summary.js <file.cpuprofile> [top]');
  process.exit(2);
}
const top = Number(topArg ?? 25);
const profile = JSON.parse(readFileSync(file, 'utf8'));
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const counts = new Map();
for (const id of profile.samples) counts.set(id, (counts.get(id) ?? 0) + 1);
const total = profile.samples.length;

function moduleOf(url, name) {
  if (name === '(idle)' || name === '(program)' || name === '(garbage collector)') return name;
  if (!url) return '(native)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1];
  if (url.startsWith('node:')) return 'node:internal';
  const dist = /\/dist\/(.*)$/.exec(url);
  if (dist) return `src/${dist[1].replace(/\.js$/, '.ts')}`;
  return url.replace(/^file:\/\//, '');
}

const byFunction = new Map();
const byModule = new Map();
for (const [id, count] of counts) {
  const node = byId.get(id);
  const { functionName, url, lineNumber } = node.callFrame;
  const name = functionName || '(anonymous)';
  const mod = moduleOf(url, name);
  const key = `${name}  ${mod}${url ? `:${lineNumber + 1}` : ''}`;
  byFunction.set(key, (byFunction.get(key) ?? 0) + count);
  byModule.set(mod, (byModule.get(mod) ?? 0) + count);
}
// Inclusive time: each sample counts once for every distinct function on its stack.
const parent = new Map();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const inclusive = new Map();
for (const [id, count] of counts) {
  const seen = new Set();
  for (let at = id; at !== undefined; at = parent.get(at)) {
    const { functionName, url, lineNumber } = byId.get(at).callFrame;
    const key = `${functionName || '(anonymous)'}  ${moduleOf(url, functionName)}${url ? `:${lineNumber + 1}` : ''}`;
    if (seen.has(key)) continue;
    seen.add(key);
    inclusive.set(key, (inclusive.get(key) ?? 0) + count);
  }
}

const usPerSample = (profile.endTime - profile.startTime) / total;
const pct = (n) => `${((n / total) * 100).toFixed(1).padStart(5)}%${per ? ` ${((n * usPerSample) / per).toFixed(1).padStart(7)} us` : ''}`;
const print = (title, map, n) => {
  console.log(`\n${title}`);
  for (const [k, v] of [...map].sort((a, b) => b[1] - a[1]).slice(0, n)) console.log(`${pct(v)}  ${k}`);
};
const idle = byModule.get('(idle)') ?? 0;
console.log(`${file}: ${total} samples, ${pct(total - idle)} busy`);
print('self time by module', byModule, top);
print('self time by function', byFunction, top);
inclusive.delete('(root)  (native)');
print('inclusive time by function', inclusive, top);
