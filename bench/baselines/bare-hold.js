import { createServer } from 'node:http';

/**
 * The inbox scenario's memory baseline: a bare node:http server that holds every request until
 * its wait ends (one timer each, as the service's waiter has), then answers an empty inbox. No
 * framework, no authentication, no database: what an HTTP long-poll costs at the least, so the
 * service's memory per held request can be read against it.
 */
const EMPTY = JSON.stringify({ messages: [], unreadTotal: 0, hasMore: false });

const server = createServer((req, res) => {
  if (req.url === '/healthz') {
    res.setHeader('content-type', 'application/json');
    res.end('{"status":"ok"}');
    return;
  }
  const wait = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('wait') ?? 0);
  const answer = () => {
    if (res.writableEnded) return;
    res.setHeader('content-type', 'application/json');
    res.end(EMPTY);
  };
  const timer = setTimeout(answer, wait * 1000);
  res.once('close', () => clearTimeout(timer));
});
server.keepAliveTimeout = 72_000;
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1');
const stop = () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
  setTimeout(() => process.exit(0), 2000).unref();
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
