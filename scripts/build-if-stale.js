// Builds the workspace packages and dist/ with tsc only when a source (or the build configuration)
// is newer than the newest output, so `npm run ams` costs a build once, not on every call.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, rmSync, statSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { copyAssets } from './copy-assets.js';

const root = fileURLToPath(new URL('..', import.meta.url));

function newestMtime(dir) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(path) : statSync(path).mtimeMs);
  }
  return newest;
}

/** Builds one TypeScript project (a workspace package, then the server) when its sources are newer than its output. */
function buildIfStale(dir, entryPoints) {
  const sources = Math.max(newestMtime(join(dir, 'src')), ...['tsconfig.json', 'tsconfig.build.json', 'tsconfig.base.json']
    .filter((f) => existsSync(join(dir, f))).map((f) => statSync(join(dir, f)).mtimeMs));
  const upToDate = entryPoints.every((f) => existsSync(f)) && newestMtime(join(dir, 'dist')) >= sources;
  if (upToDate) return;
  const buildInfo = join(dir, 'dist', '.tsbuildinfo');
  // An incremental build trusts its .tsbuildinfo even when outputs were deleted.
  if (!entryPoints.every((f) => existsSync(f))) rmSync(buildInfo, { force: true });
  execFileSync(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(dir, 'tsconfig.build.json')], { stdio: 'inherit', cwd: dir });
  // What tsc does not copy (the presence scripts) goes next to the server's output.
  if (dir === root) copyAssets();
  // tsc leaves outputs alone when a touched source compiles to the same text: mark the build as done.
  if (existsSync(buildInfo)) utimesSync(buildInfo, new Date(), new Date());
}

for (const name of ['protocol', 'client']) {
  const dir = join(root, 'packages', name);
  buildIfStale(dir, [join(dir, 'dist', 'index.js')]);
}
buildIfStale(root, [join(root, 'dist', 'main.js'), join(root, 'dist', 'cli', 'main.js')]);
