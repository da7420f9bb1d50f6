import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { Webhook } from 'standardwebhooks';
import type { CheckedTarget } from './ssrf-guard.js';

/** A receiver has this long to answer with a 2xx (docs/webhooks.md). */
export const DELIVERY_TIMEOUT_MS = 10_000;
/** The failure of an attempt cut short by this node's shutdown: not counted, the delivery is given back. */
export const INTERRUPTED = 'interrupted by shutdown';
/** Bytes of a receiver's answer read before the connection is dropped: only the status matters. */
const RESPONSE_BYTES_MAX = 64 * 1024;

export interface SignedRequest {
  /** The delivery id: the `webhook-id` header, the same on every attempt. */
  id: string;
  /** The endpoint's secret, whsec_... */
  secret: string;
  body: string;
}

/** The Standard Webhooks headers of one attempt: signed over id, this attempt's time and the body. */
export function signedHeaders({ id, secret, body }: SignedRequest, now = new Date()): Record<string, string> {
  return {
    'content-type': 'application/json',
    'user-agent': 'agent-messaging-service-webhooks',
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
    'webhook-signature': new Webhook(secret).sign(id, now, body),
  };
}

/**
 * One POST to a checked target. Resolves with null on a 2xx, with the failure otherwise (a
 * status, a timeout, a network error): never with the secret or a header in it. Redirects are
 * not followed (a 3xx is a failure). The connection goes to `target.address` whatever the DNS
 * says now (the pinned lookup).
 */
export function postSigned(target: CheckedTarget, request: SignedRequest, signal: AbortSignal, timeoutMs = DELIVERY_TIMEOUT_MS): Promise<string | null> {
  const pinned: LookupFunction = (_hostname, options, callback) => {
    if (options.all) callback(null, [{ address: target.address, family: target.family }]);
    else callback(null, target.address, target.family);
  };
  const send = target.url.protocol === 'https:' ? https.request : http.request;
  const body = Buffer.from(request.body, 'utf8');
  return new Promise((resolve) => {
    let settled = false;
    const finish = (failure: string | null): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      req.destroy();
      resolve(failure);
    };
    const req = send(target.url, {
      method: 'POST',
      headers: { ...signedHeaders(request), 'content-length': String(body.length) },
      lookup: pinned,
      agent: false,
    });
    const timer = setTimeout(() => finish(`no answer within ${timeoutMs / 1000} s`), timeoutMs);
    const onAbort = (): void => finish(INTERRUPTED);
    signal.addEventListener('abort', onAbort, { once: true });
    req.on('error', (err: NodeJS.ErrnoException) => finish(err.code ? `connection failed (${err.code})` : 'connection failed'));
    req.on('response', (res) => {
      const status = res.statusCode ?? 0;
      let read = 0;
      res.on('data', (chunk: Buffer) => {
        read += chunk.length;
        if (read > RESPONSE_BYTES_MAX) res.destroy();
      });
      const verdict = status >= 200 && status < 300 ? null
        : status >= 300 && status < 400 ? `HTTP ${status} (redirects are not followed)`
          : `HTTP ${status}`;
      res.on('end', () => finish(verdict));
      res.on('close', () => finish(verdict));
      res.on('error', () => finish(verdict));
    });
    if (signal.aborted) onAbort();
    else req.end(body);
  });
}
