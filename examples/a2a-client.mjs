// examples/a2a-client.mjs: an outside Agent2Agent client tasks an agent of the service, with the
// official SDK's client, and follows the task while the agent works it over REST (docs/a2a.md).
//   npm start &   then   node examples/a2a-client.mjs
import { randomUUID } from 'node:crypto';
import { SendMessageRequest, TaskState } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory } from '@a2a-js/sdk/client';

const BASE = process.env.AMS_URL ?? 'http://127.0.0.1:3000';

async function call(method, path, body, jwt) {
  const res = await fetch(`${BASE}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...(jwt === undefined ? {} : { authorization: `Bearer ${jwt}` }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await res.json();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

// Setup over REST (open mode): the caller and the agent it tasks, each with an API token.
const suffix = Date.now().toString(36);
const token = async (agentId) => (await call('POST', `/api/v1/agents/${agentId}/tokens`, {})).token;
const caller = await call('POST', '/api/v1/agents', { name: `caller-${suffix}`, displayName: 'Caller', role: 'agent' });
const translator = await call('POST', '/api/v1/agents', { name: `translator-${suffix}`, displayName: 'Translator', role: 'agent' });
const callerToken = await token(caller.id);
const translatorJwt = (await call('POST', '/api/v1/sessions', { apiToken: await token(translator.id) })).token;

// The A2A client: every request it makes carries the caller's credential (an API token or a JWT).
const fetchImpl = (input, init) => {
  const headers = new globalThis.Headers(init?.headers);
  headers.set('authorization', `Bearer ${callerToken}`);
  return fetch(input, { ...init, headers });
};
const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
  transports: [new JsonRpcTransportFactory({ fetchImpl })],
  cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
}));
// The trailing slash: the card is resolved relative to this URL, at .well-known/agent-card.json.
const client = await factory.createFromUrl(`${BASE}/a2a/${translator.name}/`);
const card = await client.getAgentCard();
console.log('card', JSON.stringify({ name: card.name, streaming: card.capabilities?.streaming, url: card.supportedInterfaces[0]?.url }));

// The agent's side: it works the task over REST once it sees it (any interface would do).
async function work(taskId) {
  await call('POST', `/api/v1/tasks/${taskId}/state`, { state: 'working', message: { body: 'Translating' } }, translatorJwt);
  await call('POST', `/api/v1/tasks/${taskId}/state`, { state: 'completed', message: { body: 'Bonjour le monde' } }, translatorJwt);
}

// Send a message as a stream: first the task, then a status update for each move, until it ends.
const request = SendMessageRequest.fromJSON({
  message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'Translate into French\nHello world' }] },
});
let working;
for await (const event of client.sendMessageStream(request)) {
  const { $case, value } = event.payload;
  if ($case === 'task') {
    console.log('task', JSON.stringify({ state: TaskState[value.status.state], title: value.metadata.title }));
    working = work(value.id);
  } else if ($case === 'statusUpdate') {
    const text = value.status.message?.parts.find((p) => p.content?.$case === 'text')?.content.value;
    console.log('update', JSON.stringify({ state: TaskState[value.status.state], text }));
  }
}
await working;
