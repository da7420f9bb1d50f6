import { AgentCard, ListTasksRequest, Role, SendMessageRequest, TaskState, type StreamResponse, type Task } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory, type Client } from '@a2a-js/sdk/client';
import { beforeAll, describe, expect, it } from 'vitest';
import { bootstrapAdmin, newAdmin, newAgent, scopedSession, type Api, type TestAgent } from '../helpers/api.js';
import { callTool, connectMcp } from '../helpers/mcp.js';
import { useTestServer } from '../helpers/suite.js';
import { waitUntil } from '../helpers/wait.js';
import { connectReady, emitWithAck } from '../helpers/ws.js';

// docs/a2a.md: every agent reachable over the Agent2Agent protocol, through the official SDK's client.

/** A fetch that sends the caller's Bearer with every request the SDK makes (card and JSON-RPC). */
const bearerFetch = (credential: string | undefined): typeof fetch => (input, init) => {
  const headers = new Headers(init?.headers);
  if (credential !== undefined) headers.set('authorization', `Bearer ${credential}`);
  return fetch(input, { ...init, headers });
};

/** The SDK's client of `agent`'s interface, its card resolved from `<base>/a2a/<name>`. */
async function a2aClient(baseUrl: string, agentName: string, credential: string | undefined): Promise<Client> {
  const fetchImpl = bearerFetch(credential);
  const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [new JsonRpcTransportFactory({ fetchImpl })],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
  }));
  // The trailing slash: the SDK resolves the card's path relative to the URL it is given.
  return factory.createFromUrl(`${baseUrl}/a2a/${agentName}/`);
}

let counter = 0;
/** A send's parameters: text parts (and a data part), non-blocking unless asked. */
const sendParams = (texts: string[], options: { data?: Record<string, unknown>; blocking?: boolean; taskId?: string; messageId?: string } = {}): SendMessageRequest =>
  SendMessageRequest.fromJSON({
    message: {
      messageId: options.messageId ?? `msg-${process.pid}-${counter++}`,
      role: 'ROLE_USER',
      ...(options.taskId === undefined ? {} : { taskId: options.taskId }),
      parts: [...texts.map((text) => ({ text })), ...(options.data === undefined ? [] : [{ data: options.data }])],
    },
    configuration: { returnImmediately: options.blocking !== true },
  });

const asTask = (result: unknown): Task => {
  expect(result).toHaveProperty('status');
  return result as Task;
};

/** The assignee's move over REST (docs/protocol.md, Tasks). */
async function move(api: Api, agent: TestAgent, taskId: string, state: string, body?: string): Promise<void> {
  const res = await api.post(`/api/v1/tasks/${taskId}/state`, { state, ...(body === undefined ? {} : { message: { body } }) }, { jwt: agent.jwt });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}

async function rpc(api: Api, agentName: string, body: unknown, credential?: string, headers: Record<string, string> = {}) {
  return api.request('POST', `/a2a/${agentName}`, { rawBody: typeof body === 'string' ? body : JSON.stringify(body), headers: { 'content-type': 'application/json', ...headers }, ...(credential === undefined ? {} : { jwt: credential }) });
}

describe('A2A, open mode', () => {
  const t = useTestServer();
  let admin: TestAgent;
  let alice: TestAgent;
  let bob: TestAgent;
  let carol: TestAgent;

  beforeAll(async () => {
    admin = await newAdmin(t.api);
    [alice, bob, carol] = [await newAgent(t.api), await newAgent(t.api), await newAgent(t.api)];
  });

  it('serves a card without a credential: display name, interface URL, streaming, Bearer', async () => {
    const res = await t.api.get(`/a2a/${bob.name}/.well-known/agent-card.json`);
    expect(res.status).toBe(200);
    const card = AgentCard.fromJSON(res.body);
    expect(card.name).toBe(`Test ${bob.name}`);
    expect(card.capabilities?.streaming).toBe(true);
    expect(card.supportedInterfaces.map((i) => [i.url, i.protocolBinding])).toContainEqual([`${t.server.url}/a2a/${bob.name}`, 'JSONRPC']);
    expect(card.supportedInterfaces.map((i) => i.protocolVersion)).toEqual(expect.arrayContaining(['1.0', '0.3']));
    expect(res.body.url).toBe(`${t.server.url}/a2a/${bob.name}`);
    expect(card.securitySchemes.bearer?.scheme).toEqual({ $case: 'httpAuthSecurityScheme', value: expect.objectContaining({ scheme: 'Bearer' }) });
    expect(card.securityRequirements).toEqual([{ schemes: { bearer: { list: [] } } }]);
    expect(card.defaultInputModes).toContain('text/plain');
    expect(card.skills).toEqual([]);
    expect(card.description).toBe('');
    // The A2A specification requires both on every card, unset or not: present in the JSON itself.
    expect(res.body.description).toBe('');
    expect(res.body.skills).toEqual([]);
  });

  it('shows the agent\'s description and skills once set (PATCH /api/v1/agents/:id)', async () => {
    const skills = [{ id: 'translate', name: 'Translate', description: 'Into French', tags: ['language', 'fr'] }];
    const patched = await t.api.request('PATCH', `/api/v1/agents/${carol.id}`, { body: { description: 'Translates documents', skills }, jwt: carol.jwt });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    const client = await a2aClient(t.server.url, carol.name, alice.jwt);
    const card = await client.getAgentCard();
    expect(card.description).toBe('Translates documents');
    expect(card.skills.map(({ id, name, description, tags }) => ({ id, name, description, tags }))).toEqual(skills);
  });

  it('resolves the card with the SDK and answers 404 for an unknown or a disabled agent', async () => {
    const client = await a2aClient(t.server.url, bob.name, alice.jwt);
    expect((await client.getAgentCard()).name).toBe(`Test ${bob.name}`);
    expect((await t.api.get('/a2a/no-such-agent/.well-known/agent-card.json')).status).toBe(404);
    const disabled = await newAgent(t.api);
    expect((await t.api.post(`/api/v1/agents/${disabled.id}/disable`, undefined, { jwt: admin.jwt })).status).toBe(200);
    expect((await t.api.get(`/a2a/${disabled.name}/.well-known/agent-card.json`)).status).toBe(404);
    expect((await rpc(t.api, disabled.name, { jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: alice.id } }, alice.jwt, { 'A2A-Version': '1.0' })).status).toBe(404);
    // By id, not by name: 404.
    expect((await t.api.get(`/a2a/${bob.id}/.well-known/agent-card.json`)).status).toBe(404);
  });

  it('refuses JSON-RPC without a valid Bearer: 401 with WWW-Authenticate', async () => {
    for (const credential of [undefined, 'not-a-jwt']) {
      const res = await rpc(t.api, bob.name, { jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'x' } }, credential);
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Bearer');
    }
    const client = await a2aClient(t.server.url, bob.name, undefined);
    await expect(client.getTask({ tenant: '', id: alice.id })).rejects.toThrow();
  });

  it('answers malformed JSON-RPC, unknown methods and bad params with the protocol\'s errors', async () => {
    const v1 = { 'A2A-Version': '1.0' };
    expect((await rpc(t.api, bob.name, '{not json', alice.jwt, v1)).body).toEqual({ jsonrpc: '2.0', id: null, error: expect.objectContaining({ code: -32700 }) });
    const unknown = await rpc(t.api, bob.name, { jsonrpc: '2.0', id: 7, method: 'NoSuchMethod', params: {} }, alice.jwt, v1);
    expect(unknown.status).toBe(200);
    expect(unknown.body).toMatchObject({ id: 7, error: { code: -32601 } });
    const notRpc = await rpc(t.api, bob.name, { id: 8, method: 'GetTask' }, alice.jwt, v1);
    expect(notRpc.body.error.code).toBeLessThan(0);
    const noText = await rpc(t.api, bob.name, { jsonrpc: '2.0', id: 9, method: 'SendMessage', params: { message: { messageId: 'm', role: 'ROLE_USER', parts: [{ data: { a: 1 } }] } } }, alice.jwt, v1);
    expect(noText.body).toMatchObject({ id: 9, error: { code: -32602 } });
    const byUrl = await rpc(t.api, bob.name, { jsonrpc: '2.0', id: 10, method: 'SendMessage', params: { message: { messageId: 'm2', role: 'ROLE_USER', parts: [{ text: 'see' }, { url: 'http://example.com/x', mediaType: 'text/plain' }] } } }, alice.jwt, v1);
    expect(byUrl.body).toMatchObject({ id: 10, error: { code: -32005 } });
    const tooLong = await rpc(t.api, bob.name, { jsonrpc: '2.0', id: 11, method: 'SendMessage', params: { message: { messageId: 'm3', role: 'ROLE_USER', parts: [{ text: 'x'.repeat(20_000) }] } } }, alice.jwt, v1);
    expect(tooLong.body).toMatchObject({ id: 11, error: { code: -32602 } });
    // A text that is not a string is refused, in both protocol versions, and no task is made of it.
    const before = (await t.api.get('/api/v1/tasks?as=requester', { jwt: alice.jwt })).body.tasks.length;
    for (const [id, text] of [[13, { a: 1 }], [14, 42], [15, null], [16, ['x']]] as const) {
      const bad = await rpc(t.api, bob.name, { jsonrpc: '2.0', id, method: 'SendMessage', params: { message: { messageId: `bad-${id}`, role: 'ROLE_USER', parts: [{ text }] } } }, alice.jwt, v1);
      expect(bad.body, JSON.stringify(text)).toMatchObject({ id, error: { code: -32602 } });
    }
    const legacyBad = await rpc(t.api, bob.name, { jsonrpc: '2.0', id: 17, method: 'message/send', params: { message: { kind: 'message', messageId: 'bad-legacy', role: 'user', parts: [{ kind: 'text', text: { a: 1 } }] } } }, alice.jwt);
    expect(legacyBad.body).toMatchObject({ id: 17, error: { code: -32602 } });
    expect((await t.api.get('/api/v1/tasks?as=requester', { jwt: alice.jwt })).body.tasks.length).toBe(before);
    const deep = await rpc(t.api, bob.name, `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":${'['.repeat(100)}${']'.repeat(100)}}`, alice.jwt, v1);
    expect(deep.status).toBe(400);
    const unknownTask = await rpc(t.api, bob.name, { jsonrpc: '2.0', id: 12, method: 'GetTask', params: { id: '0190c3f5-0000-7000-8000-000000000000' } }, alice.jwt, v1);
    expect(unknownTask.body).toMatchObject({ id: 12, error: { code: -32001 } });
  });

  it('file parts with bytes become the caller\'s uploads, attached to the task\'s message; a bad file name is refused', async () => {
    const v1 = { 'A2A-Version': '1.0' };
    const raw = Buffer.from('the report, in full').toString('base64');
    const sent = await rpc(t.api, bob.name, { jsonrpc: '2.0', id: 20, method: 'SendMessage', params: { message: { messageId: `f-${Date.now()}`, role: 'ROLE_USER', parts: [{ text: 'Read this' }, { raw, filename: 'report.txt', mediaType: 'text/plain' }] }, configuration: { returnImmediately: true } } }, alice.jwt, v1);
    expect(sent.body.error).toBeUndefined();
    const taskId = (sent.body.result.task ?? sent.body.result).id as string;
    const task = await t.api.get(`/api/v1/tasks/${taskId}`, { jwt: bob.jwt });
    const page = await t.api.get(`/api/v1/rooms/${task.body.roomId}/messages`, { jwt: bob.jwt });
    const message = (page.body.messages as { id: string; attachments: { id: string; name: string; size: number }[] }[]).find((m) => m.id === task.body.history[0].messageId);
    expect(message?.attachments).toEqual([expect.objectContaining({ name: 'report.txt', contentType: 'text/plain', size: 19 })]);
    const file = await fetch(`${t.server.url}/api/v1/files/${message!.attachments[0]!.id}`, { headers: { authorization: `Bearer ${bob.jwt}` } });
    expect(await file.text()).toBe('the report, in full');
    const badName = await rpc(t.api, bob.name, { jsonrpc: '2.0', id: 21, method: 'SendMessage', params: { message: { messageId: `g-${Date.now()}`, role: 'ROLE_USER', parts: [{ text: 'x' }, { raw, filename: '../etc/passwd', mediaType: 'text/plain' }] } } }, alice.jwt, v1);
    expect(badName.body.error.code).toBeLessThan(0);
  });

  it('sends without blocking: a task in submitted, the caller requester, the target assignee, in their direct room', async () => {
    const client = await a2aClient(t.server.url, bob.name, alice.jwt);
    const result = asTask(await client.sendMessage(sendParams(['Summarise the report', 'by Friday'], { data: { pages: 3 }, messageId: `m-${Date.now()}` })));
    expect(result.status?.state).toBe(TaskState.TASK_STATE_SUBMITTED);
    const ours = await t.api.get(`/api/v1/tasks/${result.id}`, { jwt: bob.jwt });
    expect(ours.status).toBe(200);
    expect(ours.body).toMatchObject({ id: result.id, title: 'Summarise the report', requesterId: alice.id, assigneeId: bob.id, roomId: result.contextId, state: 'submitted' });
    const direct = await t.api.post('/api/v1/direct-rooms', { agentId: bob.id }, { jwt: alice.jwt });
    expect(direct.status).toBe(200);
    expect(direct.body).toMatchObject({ id: result.contextId, kind: 'direct' });
    expect(result.status?.message?.parts[0]?.content).toEqual({ $case: 'text', value: 'Summarise the report\nby Friday' });
    expect(result.status?.message?.role).toBe(Role.ROLE_USER);
  });

  it('the A2A messageId is the clientTaskId: a repeat gives the same task', async () => {
    const client = await a2aClient(t.server.url, bob.name, alice.jwt);
    const messageId = `repeat-${Date.now()}`;
    const first = asTask(await client.sendMessage(sendParams(['once'], { messageId })));
    const second = asTask(await client.sendMessage(sendParams(['once'], { messageId })));
    expect(second.id).toBe(first.id);
  });

  it('lists the caller\'s tasks given to this agent in full pages, narrowed by context and state', async () => {
    const [caller, erin, frank] = [await newAgent(t.api), await newAgent(t.api), await newAgent(t.api)];
    const toErin = await a2aClient(t.server.url, erin.name, caller.jwt);
    const toFrank = await a2aClient(t.server.url, frank.name, caller.jwt);
    // Interleaved, newest last: a filter after paging would leave pages short.
    const erins: string[] = [];
    for (let i = 0; i < 3; i++) {
      erins.push(asTask(await toErin.sendMessage(sendParams([`for erin ${i}`]))).id);
      asTask(await toFrank.sendMessage(sendParams([`for frank ${i}`])));
    }
    const first = await toErin.listTasks(ListTasksRequest.fromJSON({ pageSize: 2 }));
    expect(first.tasks.map((task) => task.id)).toEqual([erins[2], erins[1]]);
    expect(first.nextPageToken).not.toBe('');
    const second = await toErin.listTasks(ListTasksRequest.fromJSON({ pageSize: 2, pageToken: first.nextPageToken }));
    expect(second.tasks.map((task) => task.id)).toEqual([erins[0]]);
    expect(second.nextPageToken).toBe('');
    const context = first.tasks[0]!.contextId;
    expect((await toErin.listTasks(ListTasksRequest.fromJSON({ contextId: context }))).tasks.map((task) => task.id)).toEqual([...erins].reverse());
    // Another context (frank's direct room with the caller), or text that is no room id: none of erin's.
    const franks = await toFrank.listTasks(ListTasksRequest.fromJSON({}));
    expect((await toErin.listTasks(ListTasksRequest.fromJSON({ contextId: franks.tasks[0]!.contextId }))).tasks).toEqual([]);
    expect((await toErin.listTasks(ListTasksRequest.fromJSON({ contextId: 'not-a-room' }))).tasks).toEqual([]);
    await move(t.api, erin, erins[1]!, 'working');
    expect((await toErin.listTasks(ListTasksRequest.fromJSON({ status: 'TASK_STATE_WORKING' }))).tasks.map((task) => task.id)).toEqual([erins[1]]);
  });

  it('a blocking send waits while the assignee works over REST, and answers with the completed task', async () => {
    const client = await a2aClient(t.server.url, bob.name, alice.jwt);
    const pending = client.sendMessage(sendParams(['Translate this'], { blocking: true }));
    let taskId = '';
    await waitUntil('the task exists', async () => {
      const list = await t.api.get('/api/v1/tasks?as=assignee', { jwt: bob.jwt });
      const found = (list.body.tasks as { id: string; title: string }[]).find((task) => task.title === 'Translate this');
      taskId = found?.id ?? '';
      return taskId !== '';
    });
    await move(t.api, bob, taskId, 'working');
    await move(t.api, bob, taskId, 'completed', 'Done: traduit');
    const result = asTask(await pending);
    expect(result.id).toBe(taskId);
    expect(result.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(result.status?.message?.parts[0]?.content).toEqual({ $case: 'text', value: 'Done: traduit' });
    expect(result.status?.message?.role).toBe(Role.ROLE_AGENT);
  });

  it('gets and cancels a task of the caller; another caller\'s task is not found', async () => {
    const client = await a2aClient(t.server.url, bob.name, alice.jwt);
    const task = asTask(await client.sendMessage(sendParams(['Cancel me'])));
    expect((await client.getTask({ tenant: '', id: task.id })).status?.state).toBe(TaskState.TASK_STATE_SUBMITTED);
    const carolsClient = await a2aClient(t.server.url, bob.name, carol.jwt);
    await expect(carolsClient.getTask({ tenant: '', id: task.id })).rejects.toThrow(/not found/i);
    await expect(carolsClient.cancelTask({ tenant: '', id: task.id, metadata: undefined })).rejects.toThrow(/not found/i);
    const canceled = await client.cancelTask({ tenant: '', id: task.id, metadata: undefined });
    expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    expect((await t.api.get(`/api/v1/tasks/${task.id}`, { jwt: alice.jwt })).body.state).toBe('canceled');
    await expect(client.cancelTask({ tenant: '', id: task.id, metadata: undefined })).rejects.toThrow(/cancel/i);
  });

  it('streams a status update for every move, each carrying the move\'s message, until the task ends', async () => {
    const client = await a2aClient(t.server.url, bob.name, alice.jwt);
    const events: StreamResponse[] = [];
    const reading = (async () => {
      for await (const event of client.sendMessageStream(sendParams(['Stream me']))) events.push(event);
    })();
    await waitUntil('the task event', () => events.length >= 1);
    const first = events[0]?.payload;
    expect(first?.$case).toBe('task');
    const taskId = first?.$case === 'task' ? first.value.id : '';
    await move(t.api, bob, taskId, 'working', 'On it');
    await move(t.api, bob, taskId, 'input-required', 'Which language?');
    await reading;
    // The stream ends when the task waits for the caller; answering it resumes the work.
    const answer = client.sendMessageStream(sendParams(['French'], { taskId }));
    const answered: StreamResponse[] = [];
    const resumed = (async () => {
      for await (const event of answer) answered.push(event);
    })();
    await waitUntil('the answer', () => answered.length >= 1);
    await move(t.api, bob, taskId, 'completed', 'Voilà');
    await resumed;
    const updates = [...events, ...answered].flatMap((e) => (e.payload?.$case === 'statusUpdate' ? [e.payload.value] : []));
    expect(updates.map((u) => u.status?.state)).toEqual([TaskState.TASK_STATE_WORKING, TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_COMPLETED]);
    expect(updates.map((u) => u.status?.message?.parts[0]?.content)).toEqual([
      { $case: 'text', value: 'On it' }, { $case: 'text', value: 'Which language?' }, { $case: 'text', value: 'Voilà' },
    ]);
    const resumedTask = answered[0]?.payload;
    expect(resumedTask?.$case === 'task' ? resumedTask.value.status?.state : null).toBe(TaskState.TASK_STATE_WORKING);
    expect((await t.api.get(`/api/v1/tasks/${taskId}`, { jwt: alice.jwt })).body.history.map((h: { state: string }) => h.state))
      .toEqual(['submitted', 'working', 'input-required', 'working', 'completed']);
  });

  it('resubscribes to a task and sees the moves made after', async () => {
    const client = await a2aClient(t.server.url, bob.name, alice.jwt);
    const task = asTask(await client.sendMessage(sendParams(['Follow me'])));
    const events: StreamResponse[] = [];
    const reading = (async () => {
      for await (const event of client.resubscribeTask({ tenant: '', id: task.id })) events.push(event);
    })();
    await waitUntil('the task event', () => events.length >= 1);
    await move(t.api, bob, task.id, 'working');
    await move(t.api, bob, task.id, 'failed', 'Cannot');
    await reading;
    expect(events.map((e) => e.payload?.$case)).toEqual(['task', 'statusUpdate', 'statusUpdate']);
  });

  it('one subscription sees the assignee\'s moves over REST, the WebSocket and MCP, in order, each with its message', async () => {
    const client = await a2aClient(t.server.url, bob.name, alice.jwt);
    const task = asTask(await client.sendMessage(sendParams(['Every transport'])));
    const events: StreamResponse[] = [];
    const reading = (async () => {
      for await (const event of client.resubscribeTask({ tenant: '', id: task.id })) events.push(event);
    })();
    await waitUntil('the task event', () => events.length >= 1);
    await move(t.api, bob, task.id, 'working', 'Over REST');
    const { socket } = await connectReady(t.server.url, bob.jwt);
    try {
      expect((await emitWithAck(socket, 'task:move', { taskId: task.id, state: 'input-required', message: { body: 'Over the WebSocket' } })).task.state).toBe('input-required');
    } finally {
      socket.disconnect();
    }
    // The subscription stays open while the task waits for the caller: the caller answers over REST.
    expect((await t.api.post(`/api/v1/tasks/${task.id}/state`, { state: 'working', message: { body: 'The answer' } }, { jwt: alice.jwt })).status).toBe(200);
    const mcp = await connectMcp(t.server.url, bob.jwt);
    try {
      expect((await callTool(mcp, 'update_task', { taskId: task.id, state: 'completed', body: 'Over MCP' })).isError).toBe(false);
    } finally {
      await mcp.close();
    }
    await reading;
    const updates = events.flatMap((e) => (e.payload?.$case === 'statusUpdate' ? [e.payload.value] : []));
    expect(updates.map((u) => [u.status?.state, u.status?.message?.parts[0]?.content, u.metadata?.by])).toEqual([
      [TaskState.TASK_STATE_WORKING, { $case: 'text', value: 'Over REST' }, bob.id],
      [TaskState.TASK_STATE_INPUT_REQUIRED, { $case: 'text', value: 'Over the WebSocket' }, bob.id],
      [TaskState.TASK_STATE_WORKING, { $case: 'text', value: 'The answer' }, alice.id],
      [TaskState.TASK_STATE_COMPLETED, { $case: 'text', value: 'Over MCP' }, bob.id],
    ]);
  });

  it('a scoped token needs tasks:write to send and tasks:read to get', async () => {
    const task = asTask(await (await a2aClient(t.server.url, bob.name, alice.jwt)).sendMessage(sendParams(['Scoped'])));
    const readOnly = await scopedSession(t.api, alice, { actions: ['tasks:read'] });
    const reader = await a2aClient(t.server.url, bob.name, readOnly);
    expect((await reader.getTask({ tenant: '', id: task.id })).id).toBe(task.id);
    await expect(reader.sendMessage(sendParams(['Not allowed']))).rejects.toThrow();
    const writeOnly = await scopedSession(t.api, alice, { actions: ['tasks:write'] });
    await expect((await a2aClient(t.server.url, bob.name, writeOnly)).getTask({ tenant: '', id: task.id })).rejects.toThrow();
  });

  it('answers a v0.3 client\'s message/send and tasks/get (no A2A-Version header)', async () => {
    const sent = await rpc(t.api, bob.name, { jsonrpc: '2.0', id: 1, method: 'message/send', params: { message: { kind: 'message', messageId: `legacy-${Date.now()}`, role: 'user', parts: [{ kind: 'text', text: 'Legacy hello' }] }, configuration: { blocking: false } } }, alice.jwt);
    expect(sent.status).toBe(200);
    expect(sent.body.result).toMatchObject({ kind: 'task', status: { state: 'submitted' } });
    const got = await rpc(t.api, bob.name, { jsonrpc: '2.0', id: 2, method: 'tasks/get', params: { id: sent.body.result.id } }, alice.jwt);
    expect(got.body.result).toMatchObject({ id: sent.body.result.id, contextId: sent.body.result.contextId });
  });
});

describe('A2A, strict mode', () => {
  const t = useTestServer({ config: { authzMode: 'strict' } });
  let alice: TestAgent;
  let bob: TestAgent;

  beforeAll(async () => {
    const admin = await bootstrapAdmin(t.server.app.ctx.database.db, t.api);
    [alice, bob] = [await newAgent(t.api, { asJwt: admin.jwt }), await newAgent(t.api, { asJwt: admin.jwt })];
  });

  it('cards need a JWT or an API token: 401 with WWW-Authenticate without', async () => {
    const anonymous = await t.api.get(`/a2a/${bob.name}/.well-known/agent-card.json`);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toBe('Bearer');
    for (const credential of [alice.jwt, alice.apiToken]) {
      const client = await a2aClient(t.server.url, bob.name, credential);
      expect((await client.getAgentCard()).name).toBe(`Test ${bob.name}`);
    }
  });

  it('takes an API token as the Bearer of a send', async () => {
    const client = await a2aClient(t.server.url, bob.name, alice.apiToken);
    const task = asTask(await client.sendMessage(sendParams(['By token'])));
    expect(task.status?.state).toBe(TaskState.TASK_STATE_SUBMITTED);
  });
});

describe('A2A streams free what they hold when their client goes away', () => {
  // Two held waits per agent: a stream that kept its wait after its client left would use one up.
  const t = useTestServer({ config: { waitsPerAgent: 2 } });
  let alice: TestAgent;
  let bob: TestAgent;

  beforeAll(async () => {
    [alice, bob] = [await newAgent(t.api), await newAgent(t.api)];
  });

  it('five streams opened and left in turn, then a sixth still follows its task to the end', async () => {
    const client = await a2aClient(t.server.url, bob.name, alice.jwt);
    for (let i = 0; i < 5; i++) {
      const controller = new AbortController();
      const stream = client.sendMessageStream(sendParams([`Left ${i}`]), { signal: controller.signal });
      expect((await stream.next()).value?.payload?.$case).toBe('task');
      controller.abort();
      await stream.return(undefined).catch(() => undefined);
    }
    const events: StreamResponse[] = [];
    const reading = (async () => {
      for await (const event of client.sendMessageStream(sendParams(['Kept']))) events.push(event);
    })();
    await waitUntil('the task event', () => events.length >= 1);
    const first = events[0]?.payload;
    const taskId = first?.$case === 'task' ? first.value.id : '';
    await move(t.api, bob, taskId, 'completed', 'Done');
    await reading;
    expect(events.map((e) => e.payload?.$case)).toEqual(['task', 'statusUpdate']);
  });

  it('a stream, a subscription and a blocking send each hold a wait slot: beyond the cap refused before anything is done, a closed one frees its slot', async () => {
    const waits = t.server.app.ctx.limits.waits;
    const carol = await newAgent(t.api);
    const client = await a2aClient(t.server.url, bob.name, carol.jwt);
    const v1 = { 'A2A-Version': '1.0' };
    const tasksOfCarol = async (): Promise<number> => (await t.api.get('/api/v1/tasks?as=requester', { jwt: carol.jwt })).body.tasks.length;

    // Two held: a message stream and a subscription (a non-blocking send holds nothing).
    const closeStream = new AbortController();
    const stream = client.sendMessageStream(sendParams(['Held stream']), { signal: closeStream.signal });
    expect((await stream.next()).value?.payload?.$case).toBe('task');
    const followed = asTask(await client.sendMessage(sendParams(['Followed'])));
    const closeSubscription = new AbortController();
    const subscription = client.resubscribeTask({ tenant: '', id: followed.id }, { signal: closeSubscription.signal });
    expect((await subscription.next()).value?.payload?.$case).toBe('task');
    expect(waits.heldBy(carol.id)).toBe(2);
    expect(await tasksOfCarol()).toBe(2);

    // The cap reached: each held kind is refused at once with the wait cap's text, and no task is made.
    const refusal = { code: -32603, message: expect.stringMatching(/^RATE_LIMITED: Too many waiting requests for this agent \(at most 2 at once\)/) };
    const message = (id: string) => ({ messageId: `${id}-${Date.now()}`, role: 'ROLE_USER', parts: [{ text: id }] });
    const refused = [
      await rpc(t.api, bob.name, { jsonrpc: '2.0', id: 1, method: 'SendStreamingMessage', params: { message: message('stream') } }, carol.jwt, v1),
      await rpc(t.api, bob.name, { jsonrpc: '2.0', id: 2, method: 'SubscribeToTask', params: { id: followed.id } }, carol.jwt, v1),
      await rpc(t.api, bob.name, { jsonrpc: '2.0', id: 3, method: 'SendMessage', params: { message: message('blocking') } }, carol.jwt, v1),
      await rpc(t.api, bob.name, { jsonrpc: '2.0', id: 4, method: 'message/stream', params: { message: { kind: 'message', messageId: `legacy-${Date.now()}`, role: 'user', parts: [{ kind: 'text', text: 'legacy' }] } } }, carol.jwt),
    ];
    expect(refused.map((r) => [r.status, r.body])).toEqual([1, 2, 3, 4].map((id) => [200, { jsonrpc: '2.0', id, error: refusal }]));
    expect(await tasksOfCarol()).toBe(2);
    // What holds nothing still goes through: a non-blocking send, a read of a task.
    expect(asTask(await client.sendMessage(sendParams(['Not held']))).status?.state).toBe(TaskState.TASK_STATE_SUBMITTED);
    expect((await client.getTask({ tenant: '', id: followed.id })).id).toBe(followed.id);

    // Closing the stream frees its slot: a new stream is taken and follows its task to the end, then frees it.
    closeStream.abort();
    await stream.return(undefined).catch(() => undefined);
    await waitUntil('the closed stream\'s slot freed', () => waits.heldBy(carol.id) === 1);
    const events: StreamResponse[] = [];
    const reading = (async () => {
      for await (const event of client.sendMessageStream(sendParams(['After']))) events.push(event);
    })();
    await waitUntil('the new stream\'s task event', () => events.length >= 1);
    expect(waits.heldBy(carol.id)).toBe(2);
    const first = events[0]?.payload;
    await move(t.api, bob, first?.$case === 'task' ? first.value.id : '', 'completed', 'Done');
    await reading;
    expect(events.map((e) => e.payload?.$case)).toEqual(['task', 'statusUpdate']);
    await waitUntil('the ended stream\'s slot freed', () => waits.heldBy(carol.id) === 1);
    closeSubscription.abort();
    await subscription.return(undefined).catch(() => undefined);
    await waitUntil('every slot freed', () => waits.heldBy(carol.id) === 0);
  });
});
