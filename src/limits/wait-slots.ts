import { AppError } from '../errors.js';

/**
 * Long-poll waits held per agent: every request that holds its answer until something happens
 * (`GET /api/v1/inbox?wait=S`, MCP `fetch_inbox` with `wait_seconds`, a task's held read, an A2A
 * stream, subscription or blocking send for its whole life) takes a
 * slot of its agent's one counter for as long as it waits. Beyond `perAgent` slots the request is
 * refused at once (`RATE_LIMITED`, 429 on REST) and the waits already held go on: a wait costs no
 * rate-limit point while it is held, so without this bound one agent could hold thousands of them
 * (a JSON-RPC batch of `fetch_inbox` calls, or many connections). Counted per node, in memory: a
 * wait lives on the node that holds its request.
 */
export interface WaitSlots {
  /** Takes a slot of the agent; the returned function frees it (once, however often called). */
  acquire(agentId: string): () => void;
  /** Slots the agent holds now (tests, diagnostics). */
  heldBy(agentId: string): number;
  readonly perAgent: number;
}

export function createWaitSlots(perAgent: number): WaitSlots {
  const held = new Map<string, number>();
  return {
    perAgent,
    acquire(agentId) {
      const count = held.get(agentId) ?? 0;
      if (count >= perAgent) {
        throw new AppError('RATE_LIMITED', `Too many waiting requests for this agent (at most ${perAgent} at once); wait for one to answer, or ask without waiting`);
      }
      held.set(agentId, count + 1);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        const left = (held.get(agentId) ?? 1) - 1;
        if (left <= 0) held.delete(agentId);
        else held.set(agentId, left);
      };
    },
    heldBy: (agentId) => held.get(agentId) ?? 0,
  };
}
