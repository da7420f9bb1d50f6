import { createServer } from 'node:http';
import { Server } from 'socket.io';
import { v7 as uuidv7 } from 'uuid';

/**
 * What every Socket.IO baseline shares: an HTTP server answering `/healthz` (the bench waits for
 * it), Socket.IO on the service's namespace `/agents`, listening on PORT on loopback, closed on
 * SIGTERM or SIGINT. `options` are Socket.IO's server options.
 */
export function startSocketServer(options = {}) {
  const http = createServer((req, res) => {
    if (req.url === '/healthz') {
      res.setHeader('content-type', 'application/json');
      res.end('{"status":"ok"}');
      return;
    }
    res.statusCode = 404;
    res.end();
  });
  const io = new Server(http, { serveClient: false, ...options });
  http.listen(Number(process.env.PORT ?? 0), '127.0.0.1');
  const stop = () => {
    io.close(() => process.exit(0)); // also closes the HTTP server
    setTimeout(() => process.exit(0), 2000).unref();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  return io.of('/agents');
}

/**
 * The relays' protocol (R1, R2, R3): rooms from the handshake query, `agent:hello-ack`, and each
 * `message:send` of the right shape made into a message handed to `relay(message, ack)`.
 * `setup(socket, roomIds)`, awaited first, is what a relay must do before a connection may send.
 * `admit(socket, payload, ack)`, when given, checks a send first: it returns the ack to use (the
 * same or a wrapped one), or undefined once it has refused the send itself.
 */
export function serveRelay(nsp, relay, setup = async () => undefined, admit = undefined) {
  nsp.on('connection', async (socket) => {
    const { agentId = socket.id, rooms = '' } = socket.handshake.query;
    const roomIds = String(rooms).split(',').filter((r) => r !== '');
    await setup(socket, roomIds);
    socket.join(roomIds);
    socket.emit('agent:hello-ack', { agentId, rooms: roomIds });
    socket.on('message:send', (payload, given) => {
      if (typeof given !== 'function') return;
      const ack = admit === undefined ? given : admit(socket, payload, given);
      if (ack === undefined) return;
      if (typeof payload !== 'object' || payload === null || typeof payload.roomId !== 'string' || typeof payload.body !== 'string') {
        ack({ error: { code: 'VALIDATION_ERROR', message: 'roomId and body are required' } });
        return;
      }
      // A send's `data` travels as the service's does (scenario 18's ceiling: the transport's cost of the bytes).
      const data = typeof payload.data === 'object' && payload.data !== null ? { data: payload.data } : {};
      relay({ id: uuidv7(), roomId: payload.roomId, authorAgentId: String(agentId), body: payload.body, createdAt: new Date().toISOString(), ...data }, ack);
    });
  });
}
