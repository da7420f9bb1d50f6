// examples/websocket.mjs: connect, send, receive, history.
// Run against a fresh server: AMS_URL=http://127.0.0.1:3000 node examples/websocket.mjs
import { io } from 'socket.io-client';

const BASE = process.env.AMS_URL ?? 'http://127.0.0.1:3000';

async function call(method, path, body, headers = {}) {
  const res = await fetch(`${BASE}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = res.status === 204 ? null : await res.json();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

// Setup over REST (open mode, the Phase 1 rules): an admin, an agent, a token, a JWT, a room.
const suffix = Date.now().toString(36);
const admin = await call('POST', '/api/v1/agents', { name: `admin-${suffix}`, displayName: 'Admin', role: 'admin' });
const agent = await call('POST', '/api/v1/agents', { name: `bot-${suffix}`, displayName: 'Bot', role: 'agent' });
const { token: apiToken } = await call('POST', `/api/v1/agents/${agent.id}/tokens`, { scopes: {} });
const { token: jwt } = await call('POST', '/api/v1/sessions', undefined, { authorization: `Bearer ${apiToken}` });
const room = await call('POST', '/rooms', { slug: `demo-${suffix}`, name: 'Demo', members: [agent.id] }, { 'x-agent-id': admin.id });

// 1. Connect to the /agents namespace with the JWT as the query parameter `token`.
const socket = io(`${BASE}/agents`, { query: { token: jwt }, transports: ['websocket'] });
socket.on('error', (err) => console.log('error event', JSON.stringify(err))); // {code, message, requestId?}
socket.on('presence:update', (p) => console.log('presence:update', JSON.stringify(p)));

const hello = await new Promise((resolve) => socket.once('agent:hello-ack', resolve));
console.log('agent:hello-ack', JSON.stringify(hello)); // {agentId, rooms: [room ids]}: already subscribed to them

// 2. Receive: every member socket of the room gets message:new, the sender's included.
const received = new Promise((resolve) => socket.once('message:new', resolve));

// 3. Send, with an acknowledgement: {messageId} or {error: {code, message}}.
const ack = await socket.timeout(5000).emitWithAck('message:send', { roomId: room.id, body: 'Hello, room!' });
if (ack.error) throw new Error(`${ack.error.code}: ${ack.error.message}`);
console.log('message:send ack', JSON.stringify(ack));
console.log('message:new', JSON.stringify(await received));

// 4. History, newest first; pass `before: page.cursor` for the next (older) page.
const page = await socket.timeout(5000).emitWithAck('message:history', { roomId: room.id, limit: 20 });
console.log('message:history', JSON.stringify(page)); // {messages: [...], hasMore, cursor}

// 5. An error with an acknowledgement comes back in it; without one, as an `error` event.
console.log('empty body ack', JSON.stringify(await socket.timeout(5000).emitWithAck('message:send', { roomId: room.id, body: '' })));
socket.emit('room:join', { roomId: '00000000-0000-7000-8000-000000000000', requestId: 'join-1' });
await new Promise((resolve) => socket.once('error', resolve));

socket.disconnect();
