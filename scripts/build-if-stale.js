// Builds dist/ with tsc only when a file under src/ (or the build configuration) is newer than the
// newest file under dist/, so `npm run ams` costs a build once, not on every call.
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

const entryPoints = [join(root, 'dist', 'main.js'), join(root, 'dist', 'cli', 'main.js')];
const sources = Math.max(newestMtime(join(root, 'src')), ...['tsconfig.json', 'tsconfig.build.json'].map((f) => statSync(join(root, f)).mtimeMs));
const upToDate = entryPoints.every((f) => existsSync(f)) && newestMtime(join(root, 'dist')) >= sources;
if (!upToDate) {
  const buildInfo = join(root, 'dist', '.tsbuildinfo');
  // An incremental build trusts its .tsbuildinfo even when outputs were deleted.
  if (!entryPoints.every((f) => existsSync(f))) rmSync(buildInfo, { force: true });
  execFileSync(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit', cwd: root });
  copyAssets();
  // tsc leaves outputs alone when a touched source compiles to the same text: mark the build as done.
  if (existsSync(buildInfo)) utimesSync(buildInfo, new Date(), new Date());
}
