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
