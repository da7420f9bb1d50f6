import {
  FILE_CONTENT_TYPE_MAX, FILE_NAME_MAX, MCP_READ_IMAGE_MAX_BYTES, MCP_READ_TEXT_MAX_BYTES, MCP_UPLOAD_MAX_BYTES, type FileInfo,
} from '@agent-messaging/protocol';
import type { AppContext } from '../../context.js';
import { Type } from '../../core/validation.js';
import { validationError } from '../../errors.js';
import { args, defineTool } from './define.js';

/** Files: upload one as base64, read one as text or an image (REST: files.routes.ts). */

const renderFile = (f: FileInfo): string => `file "${f.name}" (id ${f.id}, ${f.contentType}, ${f.size} bytes, sha256 ${f.sha256})`;

/** The bytes of a base64 argument, at most `max` of them (VALIDATION_ERROR on `base64` otherwise). */
function decodeBase64(value: string, max: number): Buffer {
  const compact = value.replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(compact) || compact.length % 4 === 1) throw validationError({ base64: 'must be base64' });
  const bytes = Buffer.from(compact, 'base64');
  if (bytes.length > max) throw validationError({ base64: `must decode to at most ${max} bytes` });
  return bytes;
}

/** How read_file shows a type: as text, as an image, or by its description. */
function fileKind(contentType: string): 'text' | 'image' | 'other' {
  const type = contentType.split(';')[0]!.trim().toLowerCase();
  if (type.startsWith('image/') && type !== 'image/svg+xml') return 'image';
  if (type.startsWith('text/') || type === 'image/svg+xml' || /^application\/(json|xml|yaml|x-yaml|toml|javascript|ecmascript|x-ndjson|ld\+json|csv|sql|graphql)$/.test(type) || /\+(json|xml|yaml)$/.test(type)) return 'text';
  return 'other';
}

async function readWhole(ctx: AppContext, file: FileInfo): Promise<Buffer> {
  const pieces: Uint8Array[] = [];
  for await (const piece of ctx.files.bytes(file)) pieces.push(piece);
  return Buffer.concat(pieces);
}

export const FILE_TOOLS = {
  upload_file: defineTool({
    title: 'Upload a file',
    description: `Uploads a file (at most ${MCP_UPLOAD_MAX_BYTES} bytes once decoded) given as base64, with its name and content type. Returns the file (id, name, contentType, size, sha256): its id is what a message's attachments name. A file attached to no message is deleted after 24 hours.`,
    input: args({
      name: Type.String({ minLength: 1, maxLength: FILE_NAME_MAX, description: 'The file name (1 to 255 characters, no "/", "\\" or control characters), e.g. "report.json".' }),
      contentType: Type.String({ minLength: 1, maxLength: FILE_CONTENT_TYPE_MAX, description: 'Its media type, e.g. "application/json", "text/markdown", "image/png".' }),
      base64: Type.String({ maxLength: Math.ceil(MCP_UPLOAD_MAX_BYTES / 3) * 4 + 16, description: 'The file\'s bytes in base64.' }),
    }),
    readOnly: false,
    async run({ name, contentType, base64 }, { ctx, principal }) {
      const bytes = decodeBase64(base64, MCP_UPLOAD_MAX_BYTES);
      const file = await ctx.files.upload(principal, { name, contentType, declaredLength: bytes.length }, [bytes], MCP_UPLOAD_MAX_BYTES);
      return { data: { file }, text: `Uploaded ${renderFile(file)}.` };
    },
  }),

  read_file: defineTool({
    title: 'Read a file',
    description: `Reads a file you uploaded or that a message of one of your rooms carries. A textual file (text/*, JSON, XML, YAML, ...) of at most ${MCP_READ_TEXT_MAX_BYTES} bytes comes back as its text; an image of at most ${MCP_READ_IMAGE_MAX_BYTES} bytes as an image; any other file as its description only (download it over HTTP: GET /api/v1/files/{fileId}).`,
    input: args({ fileId: Type.String({ minLength: 1, maxLength: 64, description: 'The file\'s id (a UUID), as an upload or a message\'s attachments give it.' }) }),
    fields: { id: 'fileId' },
    readOnly: true,
    async run({ fileId }, { ctx, principal }) {
      const file = await ctx.files.open(principal, fileId);
      const kind = fileKind(file.contentType);
      if (kind === 'text' && file.size <= MCP_READ_TEXT_MAX_BYTES) {
        const text = (await readWhole(ctx, file)).toString('utf8');
        return { data: { file }, text: `${renderFile(file)}:\n${text}` };
      }
      if (kind === 'image' && file.size <= MCP_READ_IMAGE_MAX_BYTES) {
        const data = (await readWhole(ctx, file)).toString('base64');
        return { data: { file }, text: renderFile(file), content: [{ type: 'text', text: renderFile(file) }, { type: 'image', data, mimeType: file.contentType.split(';')[0]!.trim() }] };
      }
      return { data: { file }, text: `${renderFile(file)}; its content is not shown here (${kind === 'other' ? 'not text or an image' : 'too large'}): download it with GET /api/v1/files/${file.id}.` };
    },
  }),
};
