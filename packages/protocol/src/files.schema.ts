import { IdString, Timestamp } from './common.schema.js';
import { codePointLength, storableTextProblem, Type, Uuid } from './text.js';

/** Files (docs/files.md): uploaded as raw bytes, downloaded as raw bytes, described by FileSchema. */

/** FILE_MAX_BYTES's default: the largest upload, in bytes (25 MiB). */
export const FILE_MAX_BYTES_DEFAULT = 26_214_400;
/** Longest file name, in characters (code points). */
export const FILE_NAME_MAX = 255;
/** Longest Content-Type kept with a file, in characters. */
export const FILE_CONTENT_TYPE_MAX = 255;
/** MCP `upload_file`: the most bytes its `base64` may decode to. */
export const MCP_UPLOAD_MAX_BYTES = 1024 * 1024;
/** MCP `read_file`: textual files up to this size come back as text. */
export const MCP_READ_TEXT_MAX_BYTES = 1024 * 1024;
/** MCP `read_file`: images up to this size come back as image content. */
export const MCP_READ_IMAGE_MAX_BYTES = 5 * 1024 * 1024;

/**
 * What makes a name unsafe: `/`, `\`, control characters (C0, DEL, C1; NUL included) and the
 * bidirectional overrides and isolates (U+202A..U+202E, U+2066..U+2069), which make a name display
 * as another (`report\u202Efdp.exe`).
 */
// eslint-disable-next-line no-control-regex -- control characters are what it finds
export const FILE_NAME_FORBIDDEN = /[/\\\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/u;

/** Why `name` cannot name a file, or null when it can. */
export function fileNameProblem(name: unknown): string | null {
  if (typeof name !== 'string' || name.length === 0) return 'is required (the query parameter name)';
  // A 10,000-character name is refused without counting it all.
  if (name.length > 2 * FILE_NAME_MAX || codePointLength(name) > FILE_NAME_MAX) return `must be at most ${FILE_NAME_MAX} characters`;
  if (storableTextProblem(name) === 'lone-surrogate') return 'must be valid Unicode (no unpaired surrogates)';
  if (FILE_NAME_FORBIDDEN.test(name)) return 'must not contain "/", "\\", control characters or bidirectional overrides';
  if (name.trim() === '' || name === '.' || name === '..') return 'must name a file';
  return null;
}

export const FileSchema = Type.Object(
  {
    id: IdString(),
    name: Type.String({ description: 'The name given at upload' }),
    contentType: Type.String({ description: 'The Content-Type given at upload (application/octet-stream by default)' }),
    size: Type.Integer({ minimum: 0, description: 'Bytes' }),
    sha256: Type.String({ pattern: '^[0-9a-f]{64}$', description: 'SHA-256 of the bytes, lowercase hex; also the download\'s ETag' }),
    uploaderId: IdString('The agent that uploaded it'),
    createdAt: Timestamp(),
  },
  { title: 'File' },
);

export const UploadFileQuery = Type.Object({
  name: Type.String({ minLength: 1, maxLength: FILE_NAME_MAX, description: 'The file name: 1..255 characters without "/", "\\", control characters or bidirectional overrides' }),
});

export const FileParams = Type.Object({ id: Uuid({ description: 'File id' }) });

/** A file as the service returns it. */
export interface FileInfo {
  id: string;
  name: string;
  contentType: string;
  size: number;
  sha256: string;
  uploaderId: string;
  createdAt: string;
}
