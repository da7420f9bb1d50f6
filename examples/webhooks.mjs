// examples/webhooks.mjs: a webhook receiver that verifies signatures, and an endpoint registered for it.
// The receiver listens on loopback, so the server must allow it (WEBHOOK_ALLOW_PRIVATE_TARGETS=true):
//   WEBHOOK_ALLOW_PRIVATE_TARGETS=true npm start &   then   node examples/webhooks.mjs
import { createServer } from 'node:http';
import { Webhook } from 'standardwebhooks';

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

// Setup over REST (open mode): an admin and an agent, each with a JWT, and a room with both.
const suffix = Date.now().toString(36);
const session = async (agentId) => (await call('POST', '/api/v1/sessions', { apiToken: (await call('POST', `/api/v1/agents/${agentId}/tokens`, {})).token })).token;
const admin = await call('POST', '/api/v1/agents', { name: `admin-${suffix}`, displayName: 'Admin', role: 'admin' });
const agent = await call('POST', '/api/v1/agents', { name: `bot-${suffix}`, displayName: 'Bot', role: 'agent' });
const [adminJwt, jwt] = [await session(admin.id), await session(agent.id)];
const room = await call('POST', '/rooms', { slug: `hooks-${suffix}`, name: 'Hooks', members: [agent.id] }, { 'x-agent-id': admin.id });

// The receiver: verify the signature over the raw body, answer 2xx quickly, drop repeats by webhook-id.
let webhook; // set once the endpoint is registered: its secret is shown only in the 201
const seen = new Set();
let done;
const delivered = new Promise((resolve) => (done = resolve));
const receiver = createServer((req, res) => {
  let raw = '';
  req.setEncoding('utf8');
  req.on('data', (chunk) => (raw += chunk));
  req.on('end', () => {
    let event;
    try {
      event = webhook.verify(raw, req.headers); // throws unless signed with our secret in the last 5 minutes
    } catch {
      res.writeHead(400).end();
      return;
    }
    res.writeHead(204).end();
    if (seen.has(req.headers['webhook-id'])) return; // a retry of something already handled
    seen.add(req.headers['webhook-id']);
    done(event); // {type: "message.created", timestamp, data: {message}}
  });
});
await new Promise((resolve) => receiver.listen(0, '127.0.0.1', resolve));

// Register it for the agent (its own JWT, or an admin's): mode "always" delivers even while it is connected.
const created = await call('POST', `/api/v1/agents/${agent.id}/webhooks`,
  { url: `http://127.0.0.1:${receiver.address().port}/hook`, mode: 'always' }, { authorization: `Bearer ${jwt}` });
console.log('registered', JSON.stringify({ ...created, secret: created.secret.slice(0, 10) + '...' }));
webhook = new Webhook(created.secret);

// Someone else writes in the agent's room: the receiver gets it.
await call('POST', `/api/v1/rooms/${room.id}/messages`, { body: 'Ping for the bot' }, { authorization: `Bearer ${adminJwt}` });
console.log('received', JSON.stringify(await delivered));

// The deliveries log, newest first (the service records the outcome just after the receiver's answer).
let deliveries;
do {
  await new Promise((resolve) => setTimeout(resolve, 100));
  ({ deliveries } = await call('GET', `/api/v1/agents/${agent.id}/webhooks/${created.id}/deliveries`, undefined, { authorization: `Bearer ${jwt}` }));
} while (deliveries[0].status === 'pending');
console.log('deliveries', JSON.stringify(deliveries));
receiver.close();
