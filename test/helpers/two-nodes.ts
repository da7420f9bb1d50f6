import { Api, newAdmin, newAgent, newRoom, type TestAgent, type TestRoom } from './api.js';
import { startTestNodes, type TestNodes } from './server.js';

/**
 * Two in-process nodes on one database (the suite's engine) and the test Redis, with a room of an
 * admin, a reader and a writer: the setup of the tests of what crosses nodes (docs/catch-up.md,
 * docs/protocol.md). Each node's `app.ctx` is at hand (`nodes.nodes[i]`).
 */
export interface TwoNodeRoom {
  nodes: TestNodes;
  /** The REST API of node A (`nodes.nodes[0]`) and of node B (`nodes.nodes[1]`). */
  onA: Api;
  onB: Api;
  admin: TestAgent;
  reader: TestAgent;
  writer: TestAgent;
  room: TestRoom;
  close(): Promise<void>;
}

export async function startTwoNodeRoom(): Promise<TwoNodeRoom> {
  const nodes = await startTestNodes(2);
  try {
    const [onA, onB] = nodes.nodes.map((node) => new Api(node.url)) as [Api, Api];
    const admin = await newAdmin(onA);
    const [reader, writer] = [await newAgent(onA), await newAgent(onA)];
    const room = await newRoom(onA, admin, [reader, writer]);
    return { nodes, onA, onB, admin, reader, writer, room, close: () => nodes.close() };
  } catch (err) {
    await nodes.close();
    throw err;
  }
}
