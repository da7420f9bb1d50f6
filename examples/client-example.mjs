// examples/client-example.mjs: an agent on the client library (@agent-messaging/client).
// AMS_URL=http://127.0.0.1:3000 AMS_API_TOKEN=agt_... AMS_ROOM=<slug> node examples/client-example.mjs
import { AmsClient, AmsError } from '@agent-messaging/client';

const client = new AmsClient({
  url: process.env.AMS_URL ?? 'http://127.0.0.1:3000',
  apiToken: process.env.AMS_API_TOKEN, // exchanged for a JWT, renewed before it expires
  // lastSeqs: savedPosition,         // resume exactly where a previous run stopped
});

// Every message of the agent's rooms, its own included: exactly once, in seq order per room,
// across disconnects and server restarts.
client.on('message', (message) => console.log(`#${message.seq} ${message.senderId}: ${message.body}`));
client.on('error', (error) => console.error(`${error.code}: ${error.message}`));
await client.connect();

const rooms = await client.rooms();
const room = rooms.find((r) => r.slug === process.env.AMS_ROOM) ?? rooms[0];

// Retried across reconnects until acknowledged, and stored exactly once (automatic clientMsgId).
const sent = await client.send(room.id, 'Hello from the client library');
console.log(`sent #${sent.seq}`);

// Every failure rejects with AmsError: `code` always, `status` when it was an HTTP answer.
try {
  await client.send(room.id, '');
} catch (err) {
  if (!(err instanceof AmsError)) throw err;
  console.log(`refused: ${err.status} ${err.code}`);
}

// Once our own message came back through on('message'), save the position to resume from.
while ((client.lastSeqs()[room.id] ?? 0) < sent.seq) await new Promise((resolve) => setTimeout(resolve, 20));
console.log(`position: ${JSON.stringify(client.lastSeqs())}`);
await client.close();
