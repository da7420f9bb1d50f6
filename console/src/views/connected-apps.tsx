import { useEffect, useState } from 'preact/hooks';
import type { TokenSummary } from '@agent-messaging/client';
import { describeError, formatTime, type Session } from '../session.js';

/**
 * Connected apps (docs/console.md, docs/oauth.md): the signed-in agent's grants to OAuth clients
 * (MCP hosts that connected by URL), with the scopes granted, when, and the last use; **Revoke**
 * ends a grant's tokens and closes its live requests at once.
 */
export function ConnectedAppsView({ session }: { session: Session }) {
  const [grants, setGrants] = useState<TokenSummary[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [revoking, setRevoking] = useState<string | null>(null);

  const load = (): void => {
    session.client.tokens(session.me.id, { kind: 'oauth' }).then(
      (tokens) => setGrants(tokens.filter((t) => t.kind === 'oauth' && t.revokedAt === null)),
      (err) => setError(describeError(err)),
    );
  };
  useEffect(load, [session]);

  const revoke = (grant: TokenSummary): void => {
    setRevoking(grant.id);
    setError(null);
    session.client.revokeAgentToken(session.me.id, grant.id).then(
      () => { setRevoking(null); load(); },
      (err) => { setRevoking(null); setError(describeError(err)); },
    );
  };

  const actions = (grant: TokenSummary): string => {
    const list = (grant.scopes as { actions?: unknown }).actions;
    return Array.isArray(list) && list.length > 0 ? list.join(', ') : 'none';
  };

  return (
    <section aria-labelledby="connected-apps-title">
      <h1 id="connected-apps-title">Connected apps</h1>
      <p class="help">Applications you allowed to act as this agent over MCP (OAuth). Revoking one ends its access at once.</p>
      {error !== null && <p class="error" role="alert">{error}</p>}
      {grants === null && error === null && <p class="help">Loading…</p>}
      {grants !== null && grants.length === 0 && <p class="help">No connected apps.</p>}
      {grants !== null && grants.length > 0 && (
        <table class="connected-apps">
          <thead><tr><th scope="col">App</th><th scope="col">Scopes</th><th scope="col">Connected</th><th scope="col">Last used</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
          <tbody>
            {grants.map((grant) => (
              <tr key={grant.id}>
                <td>{grant.clientName ?? grant.clientId ?? grant.id}</td>
                <td>{actions(grant)}</td>
                <td>{formatTime(grant.createdAt)}</td>
                <td>{grant.lastUsedAt === null ? 'never' : formatTime(grant.lastUsedAt)}</td>
                <td>
                  <button type="button" disabled={revoking === grant.id} onClick={() => revoke(grant)}
                    aria-label={`Revoke ${grant.clientName ?? grant.id}`}>Revoke</button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
