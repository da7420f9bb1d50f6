import { SendMessageRequest, TaskState, type StreamResponse } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Api, newAgent, type TestAgent } from '../helpers/api.js';
import { startTestNodes, type TestNodes } from '../helpers/server.js';
import { servicesAvailable } from '../helpers/services.js';
import { waitUntil } from '../helpers/wait.js';

// docs/a2a.md, Streams: a stream opened on one node sees the moves made on another.

const redisReady = await servicesAvailable('A2A streams across nodes', ['redis']);

describe.skipIf(!redisReady)('A2A on two nodes sharing one database and one Redis', () => {
  let cluster: TestNodes;
  let apiA: Api;
  let apiB: Api;
  let alice: TestAgent;
  let bob: TestAgent;

  beforeAll(async () => {
    cluster = await startTestNodes(2);
    [apiA, apiB] = cluster.nodes.map((node) => new Api(node.url)) as [Api, Api];
    [alice, bob] = [await newAgent(apiA), await newAgent(apiA)];
  });
  afterAll(() => cluster?.close());

  it('a message stream on node A gets a status update for each move made over REST on node B', async () => {
    const fetchImpl: typeof fetch = (input, init) => {
      const headers = new Headers(init?.headers);
      headers.set('authorization', `Bearer ${alice.jwt}`);
      return fetch(input, { ...init, headers });
    };
    const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl })],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
    }));
    const client = await factory.createFromUrl(`${apiA.baseUrl}/a2a/${bob.name}/`);
    const events: StreamResponse[] = [];
    const reading = (async () => {
      const params = SendMessageRequest.fromJSON({ message: { messageId: `cluster-${Date.now()}`, role: 'ROLE_USER', parts: [{ text: 'Across nodes' }] } });
      for await (const event of client.sendMessageStream(params)) events.push(event);
    })();
    await waitUntil('the task event', () => events.length >= 1);
    const first = events[0]?.payload;
    const taskId = first?.$case === 'task' ? first.value.id : '';
    for (const state of ['working', 'completed']) {
      const res = await apiB.post(`/api/v1/tasks/${taskId}/state`, { state, message: { body: `now ${state}` } }, { jwt: bob.jwt });
      expect(res.status).toBe(200);
    }
    await reading;
    const updates = events.flatMap((e) => (e.payload?.$case === 'statusUpdate' ? [e.payload.value] : []));
    expect(updates.map((u) => u.status?.state)).toEqual([TaskState.TASK_STATE_WORKING, TaskState.TASK_STATE_COMPLETED]);
    expect(updates.map((u) => u.status?.message?.parts[0]?.content)).toEqual([{ $case: 'text', value: 'now working' }, { $case: 'text', value: 'now completed' }]);
  });
});
