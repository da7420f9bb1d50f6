import { readFileSync } from 'node:fs';

/** The service's version, from its package.json (the API documents, the MCP server's info). */
export const packageVersion = (): string =>
  (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
