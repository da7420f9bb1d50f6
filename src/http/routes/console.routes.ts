import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { AppContext } from '../../context.js';
import { notFound } from '../../errors.js';

/**
 * The console (docs/console.md): the single page Vite builds from `console/` into
 * `dist/console/` (`npm run build`), served from memory under /console/, with `/` redirecting
 * there. A handful of files read once at start: no static-file plugin, no path from the request
 * ever reaches the file system.
 */

export const CONSOLE_PREFIX = '/console/';

/** Both src/http/routes/ and dist/http/routes/ sit three levels below the package root. */
export const CONSOLE_DIST = join(fileURLToPath(new URL('../../..', import.meta.url)), 'dist', 'console');

/**
 * Everything from this service; no inline script or style (Vite's output has none). Images may also
 * be blob: URLs: the console previews raster attachments it downloaded with the session's JWT
 * (docs/console.md, Security).
 */
const CSP = "default-src 'self'; img-src 'self' blob:";

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
};

interface ConsoleFile {
  body: Buffer;
  contentType: string;
}

/** `assets/` holds Vite's content-hashed files: a new build gives new names, so they never change. */
function readAssets(dir: string): Map<string, ConsoleFile> {
  const files = new Map<string, ConsoleFile>();
  const assets = join(dir, 'assets');
  if (!existsSync(assets)) return files;
  for (const name of readdirSync(assets)) {
    const contentType = CONTENT_TYPES[extname(name)];
    if (contentType !== undefined) files.set(name, { body: readFileSync(join(assets, name)), contentType });
  }
  return files;
}

function secure(reply: FastifyReply, cacheControl: string): FastifyReply {
  return reply
    .header('content-security-policy', CSP)
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer')
    .header('x-frame-options', 'DENY')
    .header('cache-control', cacheControl);
}

/**
 * The page with what the console must know of this deployment as a meta tag (not an inline
 * script, which the CSP forbids): the company id of the directory path. COMPANY_ID is validated as
 * [A-Za-z0-9._-], so it needs no escaping inside an attribute.
 */
function readIndex(dir: string, companyId: string): Buffer | null {
  const path = join(dir, 'index.html');
  if (!existsSync(path)) return null;
  const html = readFileSync(path, 'utf8').replace('</head>', `<meta name="ams-company-id" content="${companyId}">\n</head>`);
  return Buffer.from(html);
}

export function consoleRoutes(app: FastifyInstance, ctx: AppContext, dir = CONSOLE_DIST): void {
  const index = readIndex(dir, ctx.config.companyId);
  const assets = readAssets(dir);
  const hide = { schema: { hide: true } };

  app.get('/', hide, async (_request, reply) => reply.redirect(CONSOLE_PREFIX, 302));
  // The page itself (also /console: the router ignores a trailing slash); the console routes in the
  // browser by the URL's hash, so this is its one URL.
  app.get(CONSOLE_PREFIX, hide, async (_request, reply) => {
    if (index === null) {
      return secure(reply, 'no-store').code(503).type('text/plain; charset=utf-8')
        .send('The console is not built: run `npm run build` (it writes dist/console/).\n');
    }
    return secure(reply, 'no-cache').type(CONTENT_TYPES['.html']!).send(index);
  });
  app.get<{ Params: { name: string } }>(`${CONSOLE_PREFIX}assets/:name`, hide, async (request, reply) => {
    const file = assets.get(request.params.name);
    if (file === undefined) throw notFound('Console asset');
    return secure(reply, 'public, max-age=31536000, immutable').type(file.contentType).send(file.body);
  });
}
