/**
 * Presence as the domain reads it (the directory's `online` flag). The real-time layer keeps it:
 * in memory on one node, in Redis across nodes.
 */
export interface PresenceReader {
  /** The subset of `agentIds` with at least one live WebSocket connection anywhere. */
  onlineAgents(agentIds: string[]): Promise<Set<string>>;
}
