import { readFileSync } from 'node:fs';

/** The version in the package.json two folders above a module (`dist/cli/x.js` -> the package root). */
export function packageVersion(moduleUrl: string): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', moduleUrl), 'utf8')) as { version: string };
  return pkg.version;
}
