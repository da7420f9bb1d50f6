import net from 'node:net';

/**
 * A TCP proxy in front of one service, for network faults the service's own stop cannot show:
 * `blackhole()` silently drops every byte in both directions while keeping the connections open (a
 * network cut without a reset: nothing fails on the client's side, what it reads never comes);
 * `restore()` forwards new connections again, while the blackholed ones stay dead, as a half-open
 * connection through a cut stays dead.
 */
export interface TcpProxy {
  readonly port: number;
  blackhole(): void;
  restore(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  let cut = false;
  const pairs = new Set<{ client: net.Socket; upstream: net.Socket; dead: boolean }>();
  const server = net.createServer((client) => {
    const upstream = net.connect(target.port, target.host);
    const pair = { client, upstream, dead: cut };
    pairs.add(pair);
    client.on('data', (chunk) => {
      if (!pair.dead) upstream.write(chunk);
    });
    upstream.on('data', (chunk) => {
      if (!pair.dead) client.write(chunk);
    });
    const end = (): void => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('close', end);
    upstream.on('close', () => {
      if (!pair.dead) end();
    });
    client.on('error', () => undefined);
    upstream.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    port,
    blackhole() {
      cut = true;
      for (const pair of pairs) pair.dead = true;
    },
    restore() {
      cut = false;
    },
    async close() {
      for (const pair of pairs) {
        pair.client.destroy();
        pair.upstream.destroy();
      }
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
