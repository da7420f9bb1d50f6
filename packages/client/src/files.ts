/**
 * What the client's file calls share (docs/client.md, Files): turning an upload body into what
 * fetch streams, and reading a download's description from its headers.
 */

/** An upload's body: bytes at hand, a Blob, or a stream (web or Node: any async iterable of bytes). */
export type FileBody = Uint8Array | Blob | ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>;

/** An upload may take long (25 MiB on a slow link): its answer comes after the last byte. */
export const UPLOAD_TIMEOUT_MS = 10 * 60_000;

/** A file as a download's headers describe it. */
export interface DownloadInfo {
  id: string;
  /** From Content-Disposition (`filename*` when given, else `filename`). */
  name: string;
  contentType: string;
  /** Bytes of this answer (a range's length for a range). */
  size: number;
  sha256: string;
  /** `bytes a-b/size` for a range. */
  contentRange: string | null;
}

export interface DownloadedFile extends DownloadInfo {
  /** The bytes, read as they arrive (pipe it to a file: `Readable.fromWeb(body).pipe(...)`). */
  body: ReadableStream<Uint8Array>;
}

export const isBlob = (body: unknown): body is Blob => typeof Blob !== 'undefined' && body instanceof Blob;

/** Fetch takes bytes, Blobs and web streams; anything else async-iterable (a Node Readable) becomes a web stream read as fetch pulls. */
export function toBodyInit(body: FileBody): NonNullable<RequestInit['body']> {
  if (body instanceof Uint8Array || isBlob(body) || body instanceof ReadableStream) return body as NonNullable<RequestInit['body']>;
  const iterator = body[Symbol.asyncIterator]();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { value, done } = await iterator.next();
      if (done === true) controller.close();
      else controller.enqueue(value);
    },
    async cancel() {
      await iterator.return?.();
    },
  });
}

function filenameOf(disposition: string | null): string {
  if (disposition === null) return '';
  const extended = /filename\*=UTF-8''([^;]+)/i.exec(disposition);
  if (extended) {
    try {
      return decodeURIComponent(extended[1]!.trim());
    } catch {
      // fall back to the plain filename
    }
  }
  return /filename="([^"]*)"/i.exec(disposition)?.[1] ?? '';
}

export function describeDownload(id: string, response: Response): DownloadInfo {
  const h = response.headers;
  return {
    id,
    name: filenameOf(h.get('content-disposition')),
    contentType: h.get('content-type') ?? 'application/octet-stream',
    size: Number(h.get('content-length') ?? 0),
    sha256: (h.get('etag') ?? '').replace(/"/g, ''),
    contentRange: h.get('content-range'),
  };
}

/** Whether this runs on Node.js (where a streamed upload goes through node:http, see nodeUpload). */
export const onNode = (): boolean => typeof (globalThis as { process?: { versions?: { node?: unknown } } }).process?.versions?.node === 'string';

// The little of node:http and node:stream that nodeUpload uses, typed here: this file is also
// type-checked for browsers (the console), without Node's types.
interface NodeEmitter {
  on(event: string, listener: (arg: never) => void): unknown;
}
interface NodeResponse extends NodeEmitter {
  statusCode?: number;
}
interface NodeRequest extends NodeEmitter {
  setTimeout(ms: number, onTimeout: () => void): unknown;
  destroy(err?: Error): unknown;
}
interface NodeHttp {
  request(url: URL, options: { method: string; headers: Record<string, string> }, onResponse: (res: NodeResponse) => void): NodeRequest;
}
interface NodeStream {
  Readable: { from(source: AsyncIterable<Uint8Array>, options: { objectMode: boolean }): NodeEmitter & { pipe(to: NodeRequest): unknown } };
}

/**
 * A streamed upload on Node.js, through node:http(s) with the body piped: Node 20's fetch reads a
 * stream body ahead of the socket (measured: a 50 MiB stream to a slow reader was held whole in the
 * client), where a pipe waits for the socket to drain (6 MiB at the peak). Resolves with the status
 * and the answer's text.
 */
export async function nodeUpload(url: URL, headers: Record<string, string>, body: AsyncIterable<Uint8Array>, timeoutMs: number): Promise<{ status: number; text: string }> {
  // Names in variables: a browser bundle leaves these imports alone (they never run there).
  const httpModule = url.protocol === 'https:' ? 'node:https' : 'node:http';
  const streamModule = 'node:stream';
  const { request } = (await import(/* @vite-ignore */ httpModule)) as NodeHttp;
  const { Readable } = (await import(/* @vite-ignore */ streamModule)) as NodeStream;
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', headers }, (res) => {
      // Uint8Array and TextDecoder, not Buffer: this file is typed for browsers too (the console).
      const pieces: Uint8Array[] = [];
      res.on('data', (piece: Uint8Array) => pieces.push(piece));
      res.on('end', () => {
        const decoder = new TextDecoder();
        resolve({ status: res.statusCode ?? 0, text: pieces.map((piece) => decoder.decode(piece, { stream: true })).join('') + decoder.decode() });
      });
      res.on('error', reject);
    });
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer in ${timeoutMs} ms`)));
    req.on('error', reject);
    const source = Readable.from(body, { objectMode: false });
    source.on('error', (err: Error) => req.destroy(err));
    source.pipe(req);
  });
}
