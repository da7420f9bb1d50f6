import { Readable } from 'node:stream';
import type { TSchema } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ErrorBody, FileParams, FileSchema, UploadFileQuery, type FileInfo } from '@agent-messaging/protocol';
import type { AppContext } from '../../context.js';
import { AppError } from '../../errors.js';
import { describe, SECURITY } from '../openapi.js';

/**
 * Files over REST (docs/files.md): `POST /api/v1/files` takes the raw bytes of any Content-Type as
 * a stream (this plugin's only body parser hands the request stream over unread), `GET` and `HEAD
 * /api/v1/files/:id` give them back, a chunk at a time.
 */

const binary = (description: string): TSchema => ({ type: 'string', format: 'binary', description }) as unknown as TSchema;
/** An OpenAPI body or response in every media type, as binary. */
const anyBinary = (description: string): TSchema => ({
  description,
  content: {
    'application/octet-stream': { schema: binary(description) },
    '*/*': { schema: binary(description) },
  },
}) as unknown as TSchema;

const DOWNLOAD_HEADERS = 'Headers: the stored Content-Type, Content-Length, ETag "<sha256>" (If-None-Match with it gives 304), Content-Disposition attachment with filename (and filename* for a name that is not ASCII, RFC 6266), '
  + 'X-Content-Type-Options nosniff, Content-Security-Policy sandbox, Accept-Ranges bytes.';
const ACCESS = 'Allowed to the uploader and to members (now) of a room where a message that is not deleted carries the file, within the token\'s rooms; 404 to everyone else, admins included, and for an upload that has not completed.';

/** `Content-Disposition: attachment` naming the file: an ASCII fallback, and the exact name as `filename*` when it is not ASCII (RFC 6266, RFC 8187). */
export function contentDisposition(name: string): string {
  const ascii = name.replace(/[^\x20-\x7e]/g, '_').replace(/["\\]/g, '_');
  if (ascii === name) return `attachment; filename="${ascii}"`;
  const encoded = encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encoded}`;
}

/**
 * The one byte range of a `Range` header: `{start, end}` (inclusive), `'unsatisfiable'`, or null
 * when the header is absent, malformed or asks for several ranges (then the whole file is sent, as
 * RFC 9110 allows a server to ignore Range).
 */
export function parseRange(header: string | undefined, size: number): { start: number; end: number } | 'unsatisfiable' | null {
  if (header === undefined) return null;
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (match === null) return null;
  const [, first, last] = match as unknown as [string, string, string];
  if (first === '' && last === '') return null;
  if (first === '') {
    const suffix = Number(last);
    if (suffix === 0 || size === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(first);
  const end = last === '' ? size - 1 : Math.min(Number(last), size - 1);
  if (last !== '' && Number(last) < start) return null;
  if (start >= size) return 'unsatisfiable';
  return { start, end };
}

function fileHeaders(reply: FastifyReply, file: FileInfo): void {
  void reply.headers({
    'content-type': file.contentType,
    etag: `"${file.sha256}"`,
    'content-disposition': contentDisposition(file.name),
    'x-content-type-options': 'nosniff',
    'content-security-policy': 'sandbox',
    'accept-ranges': 'bytes',
    'cache-control': 'private, no-cache',
  });
}

const etagMatches = (header: string | undefined, sha256: string): boolean =>
  header !== undefined && header.split(',').some((tag) => tag.trim().replace(/^W\//, '') === `"${sha256}"` || tag.trim() === '*');

type FileRoute = { Params: { id: string } };

async function download(ctx: AppContext, request: FastifyRequest<FileRoute>, reply: FastifyReply, withBody: boolean): Promise<FastifyReply> {
  const file = await ctx.files.open(request.principal, request.params.id);
  fileHeaders(reply, file);
  if (etagMatches(request.headers['if-none-match'], file.sha256)) return reply.status(304).send();
  const range = parseRange(request.headers.range, file.size);
  if (range === 'unsatisfiable') {
    void reply.header('content-range', `bytes */${file.size}`);
    // The error body is JSON; the file's headers above describe the file, not it.
    void reply.removeHeader('content-disposition');
    return reply.status(416).type('application/json').send({ error: 'Range Not Satisfiable' });
  }
  const { start, end } = range ?? { start: 0, end: file.size - 1 };
  if (range !== null) void reply.status(206).header('content-range', `bytes ${start}-${end}/${file.size}`);
  void reply.header('content-length', String(end - start + 1));
  if (!withBody) return reply.send();
  return reply.send(Readable.from(ctx.files.bytes(file, start, end), { objectMode: false }));
}

export function filesRoutes(app: FastifyInstance, ctx: AppContext): void {
  // In a plugin of their own: its body parser (every Content-Type, the stream unread) is for these routes only.
  void app.register(async (files) => {
    files.removeAllContentTypeParsers();
    files.addContentTypeParser('*', (_request, payload, done) => done(null, payload));

    files.post<{ Querystring: { name?: unknown } }>('/api/v1/files', {
      schema: describe({
        operationId: 'uploadFile', summary: 'Upload a file: the body is its bytes', tags: ['files'], security: SECURITY.jwt,
        description: 'The body is the file\'s bytes, of any Content-Type (stored, and given back on download; application/octet-stream by default). '
          + 'Streamed into storage as it arrives. At most FILE_MAX_BYTES (default 26214400): a larger Content-Length is refused with 413 before the body is read, '
          + 'and a body (chunked) that grows past it is cut off with 413 and nothing is stored. Needs messages:write. '
          + 'A file attached to no message 24 hours after its upload is deleted.',
        querystring: UploadFileQuery,
        body: anyBinary('The file\'s bytes'),
        success: { 201: { schema: FileSchema, description: 'The stored file' } },
        errors: [400, 401, 403],
      }),
    }, async (request, reply) => {
      const length = request.headers['content-length'];
      const declaredLength = length !== undefined && /^\d+$/.test(length) ? Number(length) : undefined;
      // Not destroyed when the service stops reading (too large): the 413 still goes out on the socket.
      const body = ((request.body ?? request.raw) as Readable).iterator({ destroyOnReturn: false }) as AsyncIterable<Uint8Array>;
      try {
        const file = await ctx.files.upload(request.principal, { name: request.query.name, contentType: request.headers['content-type'], declaredLength }, body);
        return await reply.status(201).send(file);
      } catch (err) {
        // Too large: the rest of the body is not read, so the connection is not reused. Any other
        // refusal comes before a byte is read (or the body is gone): Node drains what remains.
        if (err instanceof AppError && err.code === 'PAYLOAD_TOO_LARGE') void reply.header('connection', 'close');
        // The client went away (or its body ended short of its Content-Length): its mistake, not a
        // failure of the service; nothing was kept, and the answer likely reaches nobody.
        if (!(err instanceof AppError) && (request.raw.readableAborted || request.raw.errored !== null)) {
          throw new AppError('BAD_REQUEST', 'The upload ended before its body did', { body: 'ended before it was complete' });
        }
        throw err;
      }
    });

    const fileResponses = (get: boolean) => {
      const success: Record<number, { schema: TSchema | null; description: string }> = {
        200: get ? { schema: anyBinary('The file\'s bytes'), description: 'The file\'s bytes' } : { schema: null, description: 'The headers of the download' },
        304: { schema: null, description: 'If-None-Match named the file\'s ETag' },
        416: { schema: get ? ErrorBody : null, description: 'The range is outside the file; Content-Range: bytes */<size>' },
      };
      if (get) success[206] = { schema: anyBinary('The requested byte range'), description: 'The requested byte range' };
      return describe({
        operationId: get ? 'downloadFile' : 'fileHead',
        summary: get ? 'Download a file (its bytes; one byte range allowed)' : 'A file\'s download headers, without its bytes',
        tags: ['files'], security: SECURITY.jwt,
        description: `${DOWNLOAD_HEADERS} ${ACCESS} One byte range in Range gives 206 with Content-Range; an unsatisfiable one 416 with Content-Range bytes */<size>; several ranges are ignored (200). Needs messages:read. HEAD gives the same status and headers without the bytes.`,
        params: FileParams,
        success,
        errors: [401, 404],
      });
    };

    files.get<FileRoute>('/api/v1/files/:id', { exposeHeadRoute: false, schema: fileResponses(true) }, (request, reply) => download(ctx, request, reply, true));
    files.head<FileRoute>('/api/v1/files/:id', { schema: fileResponses(false) }, (request, reply) => download(ctx, request, reply, false));
  });
}
