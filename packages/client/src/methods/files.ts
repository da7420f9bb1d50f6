import { AmsError } from '../errors.js';
import { describeDownload, isBlob, onNode, toBodyInit, UPLOAD_TIMEOUT_MS, type DownloadedFile, type DownloadInfo, type FileBody } from '../files.js';
import { ClientBase, enc } from '../client-base.js';
import type { FileInfo } from '../types.js';

// Files (docs/files.md, docs/client.md, Files): uploads streamed as they are read, downloads as streams.
// What the calls share (bodies, the description of a download, Node's streamed upload) is ../files.ts.

export abstract class FileMethods extends ClientBase {
  /**
   * `POST /api/v1/files`: uploads `body` as the file `name`. A Buffer, Uint8Array or Blob is sent
   * as is; a web ReadableStream, a Node Readable or any async iterable of bytes is streamed as it
   * is read (never held whole). Resolves with the stored file (its `sha256` to check).
   */
  async uploadFile(name: string, body: FileBody, options: { contentType?: string; timeoutMs?: number } = {}): Promise<FileInfo> {
    const contentType = options.contentType ?? (isBlob(body) && body.type !== '' ? body.type : 'application/octet-stream');
    const timeoutMs = options.timeoutMs ?? UPLOAD_TIMEOUT_MS;
    if (onNode() && !(body instanceof Uint8Array) && !isBlob(body)) {
      const stream = body instanceof ReadableStream ? (body as unknown as AsyncIterable<Uint8Array>) : body;
      return this.http.nodeStreamPost<FileInfo>('/api/v1/files', { query: { name }, headers: { 'content-type': contentType }, body: stream, timeoutMs });
    }
    const response = await this.http.raw('POST', '/api/v1/files', {
      query: { name },
      headers: { 'content-type': contentType },
      body: toBodyInit(body),
      // The answer comes once the last byte is stored: the whole upload is its wait.
      timeoutMs,
    });
    return (await response.json()) as FileInfo;
  }

  /** `GET /api/v1/files/:id`: the file's description (from the headers) and its bytes as a stream, read as they arrive. */
  async downloadFile(id: string, options: { range?: { start: number; end?: number } } = {}): Promise<DownloadedFile> {
    const headers: Record<string, string> = options.range === undefined ? {} : { range: `bytes=${options.range.start}-${options.range.end ?? ''}` };
    const response = await this.http.raw('GET', `/api/v1/files/${enc(id)}`, { headers });
    if (response.body === null) throw new AmsError('NETWORK_ERROR', 'the download has no body');
    return { ...describeDownload(id, response), body: response.body };
  }

  /** `HEAD /api/v1/files/:id`: the file's name, type, size and sha256, without its bytes. */
  async fileInfo(id: string): Promise<DownloadInfo> {
    const response = await this.http.raw('HEAD', `/api/v1/files/${enc(id)}`);
    return describeDownload(id, response);
  }
}
