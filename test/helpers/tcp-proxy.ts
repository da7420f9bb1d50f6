import net from 'node:net';

/**
 * A TCP proxy in front of one service, for network faults the service's own stop cannot show:
 * `blackhole()` silently drops every byte in both directions while keeping the connections open (a
 * network cut without a reset: nothing fails on the client's side, what it reads never comes);
 * `restore()` forwards new connections again, while the blackholed ones stay dead, as a half-open
 * connection through a cut stays dead. `pause()` holds every byte (in both directions, new
 * connections included) until `resume()` delivers them in order: the service looks frozen, as under
 * SIGSTOP, without stopping a service other runs share.
 */
export interface TcpProxy {
  readonly port: number;
  blackhole(): void;
  restore(): void;
  pause(): void;
  resume(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  let cut = false;
  let paused = false;
  /** Bytes held while paused, in arrival order across both directions of every connection. */
  let held: { to: net.Socket; chunk: Buffer }[] = [];
  const forward = (to: net.Socket, chunk: Buffer): void => {
    if (paused) held.push({ to, chunk });
    else to.write(chunk);
  };
  const pairs = new Set<{ client: net.Socket; upstream: net.Socket; dead: boolean }>();
  const server = net.createServer((client) => {
    const upstream = net.connect(target.port, target.host);
    const pair = { client, upstream, dead: cut };
    pairs.add(pair);
    client.on('data', (chunk: Buffer) => {
      if (!pair.dead) forward(upstream, chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (!pair.dead) forward(client, chunk);
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
    pause() {
      paused = true;
    },
    resume() {
      paused = false;
      const queue = held;
      held = [];
      for (const { to, chunk } of queue) if (!to.destroyed) to.write(chunk);
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
