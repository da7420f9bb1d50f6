import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request a webhook receiver got. */
export interface ReceivedWebhook {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** The `webhook-id` header (the delivery id). */
  id: string;
}

export interface WebhookReceiver {
  /** http://127.0.0.1:<port> */
  url: string;
  received: ReceivedWebhook[];
  /** Decides each answer's status (200 by default); may be changed by a test at any time. */
  respond: (request: ReceivedWebhook, nth: number) => number | Promise<number>;
  close(): Promise<void>;
}

/** A real HTTP receiver on loopback that records every request and answers with `respond`. */
export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const receiver: WebhookReceiver = {
    url: '',
    received: [],
    respond: () => 200,
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const request = { path: req.url ?? '/', headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), id: String(req.headers['webhook-id']) };
      receiver.received.push(request);
      void Promise.resolve(receiver.respond(request, receiver.received.length)).then((status) => {
        if (status >= 300 && status < 400) res.setHeader('location', `${receiver.url}/elsewhere`);
        res.writeHead(status).end('ok');
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return receiver;
}
