import { createServer, type AddressInfo, type Socket } from 'node:net';
import type { WebhookReceiver } from './webhook-receiver.js';

/** A webhook receiver that never answers (docs/webhooks.md, "Fairness"). */
export interface SilentServer {
  /** http://127.0.0.1:<port>/hook */
  url: string;
  /** Connections accepted so far. */
  connections(): number;
  /** Connections still open. */
  open(): number;
  close(): Promise<void>;
}

/** A TCP server on loopback that accepts every connection and never writes a byte. */
export async function startSilentServer(): Promise<SilentServer> {
  const sockets = new Set<Socket>();
  let connections = 0;
  const server = createServer((socket) => {
    connections += 1;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    // Read (and drop) the request, so that the client's close is seen.
    socket.resume();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    connections: () => connections,
    open: () => sockets.size,
    close: () => new Promise((resolve) => {
      for (const socket of sockets) socket.destroy();
      server.close(() => resolve());
    }),
  };
}

/** When each delivery (by message id) reached a receiver. */
export function timeArrivals(receiver: WebhookReceiver): Map<string, number> {
  const arrivals = new Map<string, number>();
  receiver.respond = (request) => {
    arrivals.set((JSON.parse(request.body) as { data: { message: { id: string } } }).data.message.id, Date.now());
    return 200;
  };
  return arrivals;
}
