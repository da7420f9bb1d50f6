import { readFileSync } from 'node:fs';
import { Task } from '@a2a-js/sdk';
import { JsonRpcTransportHandler, ServerCallContext } from '@a2a-js/sdk/server';
import Fastify from 'fastify';

/**
 * Scenario 25's baseline: the ceiling the A2A SDK allows. A bare Fastify server answering the
 * service's own answers, captured by the scenario (BARE_A2A_FIXTURE): `POST /tasks` with the REST
 * answer, and `POST /a2a` through the SDK's JSON-RPC transport handler (as src/a2a/a2a.routes.ts uses
 * it, one per request) over a request handler whose sendMessage returns the captured task at once.
 * No authentication, no database: the SDK's parsing, validation and serialising alone.
 */
const fixture = JSON.parse(readFileSync(process.env.BARE_A2A_FIXTURE, 'utf8'));
const task = Task.fromJSON(fixture.a2a);
const refuse = () => Promise.reject(new Error('not in this baseline'));
const handler = {
  getAgentCard: refuse,
  getAuthenticatedExtendedAgentCard: refuse,
  sendMessage: () => Promise.resolve(task),
  sendMessageStream: refuse,
  getTask: refuse,
  cancelTask: refuse,
  listTasks: refuse,
  createTaskPushNotificationConfig: refuse,
  getTaskPushNotificationConfig: refuse,
  listTaskPushNotificationConfigs: refuse,
  deleteTaskPushNotificationConfig: refuse,
  resubscribe: refuse,
};

const app = Fastify({ logger: false });
app.get('/healthz', () => ({ status: 'ok' }));
app.post('/tasks', (_request, reply) => reply.status(201).send(fixture.rest));
app.post('/a2a', async (request, reply) => {
  const transport = new JsonRpcTransportHandler(handler);
  const answer = await transport.handle(request.body, new ServerCallContext({ requestedVersion: request.headers['a2a-version'] }));
  return reply.type('application/json').send(answer);
});

await app.listen({ port: Number(process.env.PORT ?? 0), host: '127.0.0.1' });
const stop = () => app.close().then(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
