// Copies the non-TypeScript files the server reads at run time (the Redis presence scripts,
// src/**/*.lua) to the same place under dist/: tsc compiles .ts files only.
import { cpSync, mkdirSync, readdirSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const src = join(root, 'src');
const ASSET = /\.lua$/;

function assets(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return assets(path);
    return ASSET.test(entry.name) ? [path] : [];
  });
}

export function copyAssets() {
  for (const file of assets(src)) {
    const target = join(root, 'dist', relative(src, file));
    mkdirSync(dirname(target), { recursive: true });
    cpSync(file, target);
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) copyAssets();
