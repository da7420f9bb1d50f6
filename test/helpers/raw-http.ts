import { request, type Agent } from 'node:http';

/** An HTTP request as a fuzzer builds it: any method, raw path and query, any headers and bytes. */
export interface RawRequest {
  method: string;
  /** Path and query, already percent-encoded as they go on the wire. */
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
}

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/**
 * Sends one request with node:http (fetch refuses bodies on GET and normalises paths), over a
 * kept-alive agent. Rejects on a network error or after `timeoutMs`, so a hang fails the test.
 */
export function rawRequest(baseUrl: string, agent: Agent, req: RawRequest, timeoutMs = 10_000): Promise<RawResponse> {
  const url = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = { ...req.headers };
    if (req.body !== undefined) headers['content-length'] = req.body.length;
    const client = request(
      { host: url.hostname, port: url.port, method: req.method, path: req.path, headers, agent },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    client.setTimeout(timeoutMs, () => client.destroy(new Error(`no answer within ${timeoutMs} ms: ${req.method} ${req.path.slice(0, 200)}`)));
    client.on('error', reject);
    client.end(req.body);
  });
}
