import { AmsError, fromHttpError } from './errors.js';
import type { SessionKeeper } from './session.js';
import { nodeUpload } from './files.js';

/** A request that gets no answer in this time fails with TIMEOUT (the inbox adds its `wait`). */
export const REQUEST_TIMEOUT_MS = 30_000;

/** A raw request (files): its body as is, its answer as a Response once its headers are in. */
export interface RawRequestOptions {
  query?: Record<string, string | number | undefined>;
  headers?: Record<string, string>;
  /** Sent as is; a stream is sent as it is read (`duplex: 'half'`). */
  body?: NonNullable<RequestInit['body']>;
  /** Until the response's headers (the body then streams without a limit); default REQUEST_TIMEOUT_MS. */
  timeoutMs?: number;
}

export interface RequestOptions {
  query?: Record<string, string | number | undefined>;
  body?: unknown;
  /** Send the session JWT (default true). */
  auth?: boolean;
  timeoutMs?: number;
}

/** The REST side of the client: global fetch, the JWT, and every failure as an AmsError. */
export class HttpTransport {
  private readonly baseUrl: string;

  constructor(
    baseUrl: string,
    private readonly session: SessionKeeper,
    /** close(): every request in flight or to come fails with CLOSED. */
    private readonly closing: AbortSignal,
  ) {
    this.baseUrl = baseUrl.replace(/\/+$/, '');
    // One listener for all requests in flight, not one each: fifty concurrent sends would trip
    // Node's MaxListenersExceededWarning (its limit is 10 per signal).
    closing.addEventListener('abort', () => {
      for (const controller of this.inFlight) controller.abort();
    }, { once: true });
  }

  private readonly inFlight = new Set<AbortController>();

  async request<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    if (this.closing.aborted) throw new AmsError('CLOSED', 'The client was closed');
    const auth = options.auth ?? true;
    const jwt = auth ? await this.session.token() : undefined;
    try {
      return await this.once<T>(method, path, options, jwt);
    } catch (err) {
      // A JWT refused before its time (the service restarted with another secret): once more, fresh.
      if (!(auth && err instanceof AmsError && err.status === 401)) throw err;
      this.session.invalidate(jwt);
      return this.once<T>(method, path, options, await this.session.token());
    }
  }

  /**
   * A request whose body and answer are not JSON (file uploads and downloads). A non-2xx answer
   * still throws its AmsError (its body is the JSON error). Not retried: a stream body is read once.
   */
  async raw(method: string, path: string, options: RawRequestOptions = {}): Promise<Response> {
    if (this.closing.aborted) throw new AmsError('CLOSED', 'The client was closed');
    const url = this.urlOf(path, options.query);
    const init: RequestInit & { duplex?: 'half' } = { method, headers: { ...options.headers, authorization: `Bearer ${await this.session.token()}` } };
    if (options.body !== undefined) {
      init.body = options.body;
      init.duplex = 'half';
    }
    // The deadline ends with the headers: the body then streams for as long as it takes.
    return this.fetchWithin(method, url, init, options.timeoutMs ?? REQUEST_TIMEOUT_MS, async (response) => {
      if (!response.ok && response.status !== 304) throw fromHttpError(response.status, parseBody(await response.text().catch(() => '')));
      return response;
    });
  }

  /** A POST whose body streams from `body` on Node.js (files.ts, nodeUpload); its JSON answer, or its AmsError. */
  async nodeStreamPost<T>(path: string, options: { query?: Record<string, string>; headers: Record<string, string>; body: AsyncIterable<Uint8Array>; timeoutMs: number }): Promise<T> {
    if (this.closing.aborted) throw new AmsError('CLOSED', 'The client was closed');
    const url = this.urlOf(path, options.query);
    const headers = { ...options.headers, authorization: `Bearer ${await this.session.token()}` };
    let answer: { status: number; text: string };
    try {
      answer = await nodeUpload(url, headers, options.body, options.timeoutMs);
    } catch (err) {
      throw new AmsError('NETWORK_ERROR', `the service at ${url.origin} could not be reached or went away (POST ${url.pathname})`, { cause: err });
    }
    const parsed = parseBody(answer.text);
    if (answer.status < 200 || answer.status >= 300) throw fromHttpError(answer.status, parsed);
    return parsed as T;
  }

  private async once<T>(method: string, path: string, options: RequestOptions, jwt: string | undefined): Promise<T> {
    const headers: Record<string, string> = {};
    if (jwt !== undefined) headers.authorization = `Bearer ${jwt}`;
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    const init: RequestInit = { method, headers, ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }) };
    // The deadline covers the whole JSON answer.
    return this.fetchWithin(method, this.urlOf(path, options.query), init, options.timeoutMs ?? REQUEST_TIMEOUT_MS, async (response) => {
      const body = parseBody(await response.text().catch(() => ''));
      if (!response.ok) throw fromHttpError(response.status, body);
      return body as T;
    });
  }

  private urlOf(path: string, query: Record<string, string | number | undefined> = {}): URL {
    const url = new URL(`${this.baseUrl}${path}`);
    for (const [key, value] of Object.entries(query)) if (value !== undefined) url.searchParams.set(key, String(value));
    return url;
  }

  /**
   * fetch with a deadline and the client's close, then `read` of its answer within the same
   * deadline: every failure as an AmsError (CLOSED, TIMEOUT, NETWORK_ERROR, or the answer's own).
   */
  private async fetchWithin<R>(method: string, url: URL, init: RequestInit & { duplex?: 'half' }, timeoutMs: number, read: (response: Response) => Promise<R>): Promise<R> {
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, timeoutMs);
    this.inFlight.add(controller);
    if (this.closing.aborted) controller.abort();
    try {
      let response: Response;
      try {
        response = await fetch(url, { ...init, signal: controller.signal });
      } catch (err) {
        if (this.closing.aborted) throw new AmsError('CLOSED', 'The client was closed', { cause: err });
        if (timedOut) throw new AmsError('TIMEOUT', `${method} ${url.pathname}: no answer in ${timeoutMs} ms`, { cause: err });
        throw new AmsError('NETWORK_ERROR', `the service at ${url.origin} could not be reached (${method} ${url.pathname})`, { cause: err });
      }
      return await read(response);
    } catch (err) {
      if (err instanceof AmsError) throw err;
      throw new AmsError(timedOut ? 'TIMEOUT' : 'NETWORK_ERROR', `${method} ${url.pathname}: ${String(err)}`, { cause: err });
    } finally {
      clearTimeout(timer);
      this.inFlight.delete(controller);
    }
  }
}

/** An answer's body as JSON; text that is not JSON (a proxy's error page, say) as `{error}`; empty as undefined. */
function parseBody(text: string): unknown {
  if (text === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return { error: text.slice(0, 200) };
  }
}
