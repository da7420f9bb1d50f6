import { ClientBase, enc } from '../client-base.js';
import type { Agent, AgentUpdate, AuditPage, AuditQuery, Directory, IssuedToken, IssueTokenOptions, NewAgent, TokenSummary } from '../types.js';

// Agents, their API tokens, the directory and the audit log (docs/protocol.md, Agents and tokens,
// Directory, Audit log); an agent by its id or its name. The session JWT is client-base.ts's.

export abstract class AgentMethods extends ClientBase {
  agents(): Promise<Agent[]> {
    return this.http.request('GET', '/api/v1/agents');
  }

  createAgent(agent: NewAgent): Promise<Agent> {
    return this.http.request('POST', '/api/v1/agents', { body: agent });
  }

  /** Changes an agent's display name, description or skills (the agent itself, or an admin). */
  async updateAgent(agent: string, changes: AgentUpdate): Promise<Agent> {
    return this.http.request('PATCH', `/api/v1/agents/${enc(await this.agentId(agent))}`, { body: changes });
  }

  async disableAgent(agent: string): Promise<Agent> {
    return this.http.request('POST', `/api/v1/agents/${enc(await this.agentId(agent))}/disable`);
  }

  async enableAgent(agent: string): Promise<Agent> {
    return this.http.request('POST', `/api/v1/agents/${enc(await this.agentId(agent))}/enable`);
  }

  /** A new API token for an agent (shown once, in the answer). */
  async issueToken(agent: string, options: IssueTokenOptions = {}): Promise<IssuedToken> {
    return this.http.request('POST', `/api/v1/agents/${enc(await this.agentId(agent))}/tokens`, { body: options });
  }

  /**
   * An agent's API tokens and OAuth grants (`kind`: "api" or "oauth"), revoked ones included, oldest
   * first, without secrets (admin, or the agent itself: docs/oauth.md).
   */
  async tokens(agent: string, options: { kind?: 'api' | 'oauth' } = {}): Promise<TokenSummary[]> {
    const query = options.kind === undefined ? '' : `?kind=${options.kind}`;
    const { tokens } = await this.http.request<{ tokens: TokenSummary[] }>('GET', `/api/v1/agents/${enc(await this.agentId(agent))}/tokens${query}`);
    return tokens;
  }

  /**
   * Revokes one of an agent's API tokens or OAuth grants by its id (an OAuth grant: its access and
   * refresh tokens end, its live MCP requests close).
   */
  async revokeAgentToken(agent: string, tokenId: string): Promise<void> {
    await this.http.request('DELETE', `/api/v1/agents/${enc(await this.agentId(agent))}/tokens/${enc(tokenId)}`);
  }

  /** Revokes an API token by its prefix `agt_<12 hex>`. */
  async revokeToken(prefix: string): Promise<void> {
    await this.http.request('DELETE', `/api/v1/tokens/${enc(prefix)}`);
  }

  /** The agents of the company, with whether each is online. */
  async directory(options: { role?: 'admin' | 'agent' } = {}): Promise<Directory> {
    const directory = await this.http.request<Directory>('GET', `/api/companies/${enc(this.companyId)}/agents/directory`, { query: { role: options.role } });
    for (const a of directory.agents) this.agentIds.set(a.name.toLowerCase(), a.id);
    return directory;
  }

  /**
   * A page of the audit log (admins; a scoped token needs `admin`), newest first: filtered by
   * `event`, `actorId` (an agent's id or name) and `subjectId`; pass the page's `nextCursor` as `before` for the next.
   */
  async audit(options: AuditQuery = {}): Promise<AuditPage> {
    const { event, actorId, subjectId, before, limit } = options;
    const actor = actorId === undefined ? undefined : await this.agentId(actorId);
    return this.http.request('GET', '/api/v1/audit', { query: { event, actorId: actor, subjectId, before, limit } });
  }
}
