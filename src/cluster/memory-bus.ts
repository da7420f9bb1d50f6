import { LocalHandlers, type BusLogger, type ClusterBus } from './bus.js';

/** One node: a message is its handlers, run here and awaited. */
export function createMemoryBus(logger: BusLogger): ClusterBus {
  const handlers = new LocalHandlers(logger);
  return {
    live: true,
    publish: (topic, payload) => handlers.run(topic, payload),
    notify: () => undefined, // no other node
    subscribe: (topic, handler) => handlers.add(topic, handler),
    follow: () => Promise.resolve(), // no other node
    unfollow: () => undefined,
    onResume: () => undefined,
    close: () => Promise.resolve(),
  };
}
