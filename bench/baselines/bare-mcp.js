/* global Headers, Request -- the Web-standard objects the SDK transport reads (Node 20 globals) */
import { readFileSync } from 'node:fs';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { CallToolRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import Fastify from 'fastify';

/**
 * Scenario 11's baseline: the ceiling the SDK's transport allows. A bare Fastify server answering
 * the service's own answers, captured by the scenario (BARE_MCP_FIXTURE): over REST, and as MCP
 * tool results through the transport setup of src/mcp/mcp.routes.ts (stateless, a new `Server`
 * and `WebStandardStreamableHTTPServerTransport` per request, JSON answers, one shared validator).
 * No authentication, no database, no rendering: fixed answers of the same size.
 */
const fixture = JSON.parse(readFileSync(process.env.BARE_MCP_FIXTURE, 'utf8'));
const JSON_SCHEMA_VALIDATOR = new AjvJsonSchemaValidator();
const TRANSPORT_HEADERS = ['accept', 'content-type', 'mcp-protocol-version', 'mcp-session-id', 'last-event-id'];

const app = Fastify({ logger: false });
app.get('/healthz', () => ({ status: 'ok' }));
app.get('/read', () => fixture.read.rest);
app.post('/send', (_request, reply) => reply.status(201).send(fixture.send.rest));

app.post('/mcp', async (request, reply) => {
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  const server = new Server({ name: 'bare-mcp', version: '1.0.0' }, { capabilities: { tools: {} }, jsonSchemaValidator: JSON_SCHEMA_VALIDATOR });
  server.setRequestHandler(CallToolRequestSchema, (req) => (req.params.name === 'send_message' ? fixture.send.tool : fixture.read.tool));
  await server.connect(transport);
  const headers = new Headers();
  for (const name of TRANSPORT_HEADERS) if (typeof request.headers[name] === 'string') headers.set(name, request.headers[name]);
  const response = await transport.handleRequest(new Request(`http://${request.host}${request.url}`, { method: 'POST', headers }), { parsedBody: request.body });
  response.headers.forEach((value, name) => void reply.header(name, value));
  return reply.status(response.status).send(await response.text());
});

await app.listen({ port: Number(process.env.PORT ?? 0), host: '127.0.0.1' });
const stop = () => app.close().then(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
