/**
 * The `/mcp` requests of OAuth access tokens in flight on this node (a held `fetch_inbox`, a long
 * call), so that ending a grant closes them at once: the grant revoked, the API token it was granted
 * from revoked, or the agent disabled. Every node applies these through the event bridge.
 */
export interface LiveOAuthRequest {
  /** The grant's id as listed with the agent's tokens. */
  grantId: string;
  /** The API token the grant came from. */
  tokenId: string;
  agentId: string;
  close(): void;
}

export class LiveOAuthRequests {
  private readonly live = new Set<LiveOAuthRequest>();

  /** Registers a request; the returned function forgets it once answered. */
  add(request: LiveOAuthRequest): () => void {
    this.live.add(request);
    return () => this.live.delete(request);
  }

  /** A token (a grant, or the API token grants came from) ended: its requests close. */
  revoked(tokenId: string): void {
    const id = tokenId.toLowerCase();
    this.closeWhere((r) => r.grantId === id || r.tokenId === id);
  }

  /** The agent was disabled (or changed): its OAuth requests close; a new one authenticates again. */
  agentChanged(agentId: string): void {
    this.closeWhere((r) => r.agentId === agentId);
  }

  private closeWhere(match: (request: LiveOAuthRequest) => boolean): void {
    for (const request of [...this.live]) {
      if (!match(request)) continue;
      this.live.delete(request);
      request.close();
    }
  }
}
