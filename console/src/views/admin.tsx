import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useState } from 'preact/hooks';
import type { Agent, Room, TokenSummary } from '@agent-messaging/client';
import { describeError, type Role, type Session } from '../session.js';

interface Outcome {
  ok: boolean;
  text: string;
}

/** A form's result: a status line when it worked, an alert when it did not. */
function Result({ outcome }: { outcome: Outcome | null }) {
  if (outcome === null) return null;
  return outcome.ok ? <p role="status" class="ok">{outcome.text}</p> : <p role="alert" class="error">{outcome.text}</p>;
}

/** Runs one admin action and turns its success or failure into an Outcome. */
function useAction(): [Outcome | null, (action: () => Promise<string>) => Promise<void>] {
  const [outcome, setOutcome] = useState<Outcome | null>(null);
  const run = useCallback(async (action: () => Promise<string>) => {
    setOutcome(null);
    try {
      setOutcome({ ok: true, text: await action() });
    } catch (err) {
      setOutcome({ ok: false, text: describeError(err) });
    }
  }, []);
  return [outcome, run];
}

function Field({ id, label, children }: { id: string; label: string; children: ComponentChildren }) {
  return <div class="field"><label for={id}>{label}</label>{children}</div>;
}

/** An agent named by its name or its id (the fields accept both; the list suggests names). */
const findAgent = (agents: Agent[], text: string): Agent | undefined => agents.find((a) => a.name === text.trim() || a.id === text.trim());
const findRoom = (rooms: Room[], text: string): Room | undefined => rooms.find((r) => r.slug === text.trim() || r.id === text.trim());

export function AdminView({ session }: { session: Session }) {
  const { client } = session;
  const [agents, setAgents] = useState<Agent[]>([]);
  const [rooms, setRooms] = useState<Room[]>([]);
  const [tokensOf, setTokensOf] = useState<Agent | null>(null);
  // Bumped when a token is issued here: the token list of that agent is shown again.
  const [tokensVersion, setTokensVersion] = useState(0);
  const reload = useCallback(async () => {
    const [a, r] = await Promise.all([client.agents(), client.rooms()]);
    setAgents(a);
    setRooms(r);
    for (const agent of a) {
      session.names.set(agent.id, agent.displayName);
      session.displayNames.set(agent.name, agent.displayName);
    }
  }, [client, session]);
  useEffect(() => { void reload().catch(() => undefined); }, [reload]);

  return (
    <div class="admin">
      <h1>Admin</h1>
      <datalist id="agent-names">{agents.map((a) => <option key={a.id} value={a.name}>{a.displayName}</option>)}</datalist>
      <datalist id="room-slugs">{rooms.map((r) => <option key={r.id} value={r.slug}>{r.name}</option>)}</datalist>
      <CreateAgent session={session} onCreated={reload} />
      <Tokens session={session} agents={agents} onIssued={() => setTokensVersion((v) => v + 1)} />
      <Rooms session={session} agents={agents} rooms={rooms} onChanged={reload} />
      <Agents session={session} agents={agents} onChanged={reload} onShowTokens={setTokensOf} />
      {tokensOf !== null && <AgentTokens session={session} agent={tokensOf} version={tokensVersion} />}
    </div>
  );
}

/** Every agent, with Disable/Enable and the way to its tokens. */
function Agents({ session, agents, onChanged, onShowTokens }: {
  session: Session; agents: Agent[]; onChanged: () => Promise<void>; onShowTokens: (agent: Agent) => void;
}) {
  const [outcome, run] = useAction();
  const toggle = (agent: Agent): void => {
    void run(async () => {
      const disabling = agent.disabledAt === null;
      if (disabling) await session.client.disableAgent(agent.id);
      else await session.client.enableAgent(agent.id);
      await onChanged();
      return disabling ? `Disabled ${agent.name}.` : `Enabled ${agent.name}.`;
    });
  };
  return (
    <section aria-labelledby="agents-heading">
      <h2 id="agents-heading">Agents</h2>
      <Result outcome={outcome} />
      <div class="table-wrap">
        <table>
          <thead><tr><th scope="col">Name</th><th scope="col">Display name</th><th scope="col">Role</th><th scope="col">State</th><th scope="col">Id</th><th scope="col">Actions</th></tr></thead>
          <tbody>{agents.map((a) => (
            <tr key={a.id}>
              <th scope="row">{a.name}</th><td>{a.displayName}</td><td>{a.role}</td><td>{a.disabledAt === null ? 'active' : 'disabled'}</td><td class="id">{a.id}</td>
              <td class="buttons">
                <button type="button" class="secondary" aria-label={`Tokens of ${a.name}`} onClick={() => onShowTokens(a)}>Tokens</button>
                <button type="button" class="secondary" aria-label={`${a.disabledAt === null ? 'Disable' : 'Enable'} ${a.name}`} onClick={() => toggle(a)}>
                  {a.disabledAt === null ? 'Disable' : 'Enable'}
                </button>
              </td>
            </tr>
          ))}</tbody>
        </table>
      </div>
    </section>
  );
}

const tokenState = (t: TokenSummary): string =>
  t.revokedAt !== null ? 'revoked' : t.expiresAt !== null && new Date(t.expiresAt) <= new Date() ? 'expired' : 'active';

/** One agent's tokens (never their secrets: the service does not have them), each active one with Revoke. */
function AgentTokens({ session, agent, version }: { session: Session; agent: Agent; version: number }) {
  const [tokens, setTokens] = useState<TokenSummary[] | null>(null);
  const [outcome, run] = useAction();
  const load = useCallback(async () => setTokens(await session.client.tokens(agent.id)), [session, agent]);
  useEffect(() => {
    setTokens(null);
    void run(async () => {
      await load();
      return `Showing the tokens of ${agent.name}.`;
    });
  }, [load, run, agent, version]);
  const revoke = (prefix: string): void => {
    void run(async () => {
      await session.client.revokeToken(prefix);
      await load();
      return `Revoked ${prefix}.`;
    });
  };
  return (
    <section aria-labelledby="agent-tokens-heading">
      <h2 id="agent-tokens-heading">Tokens of {agent.name}</h2>
      <Result outcome={outcome} />
      {tokens !== null && (tokens.length === 0 ? <p>No tokens.</p> : (
        <div class="table-wrap">
          <table>
            <thead><tr><th scope="col">Prefix</th><th scope="col">State</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col">Expires</th><th scope="col">Scopes</th><th scope="col">Actions</th></tr></thead>
            <tbody>{tokens.map((t) => (
              <tr key={t.id}>
                <th scope="row" class="id">{t.prefix ?? `OAuth: ${t.clientName ?? t.id}`}</th><td>{tokenState(t)}</td><td>{t.createdAt}</td><td>{t.lastUsedAt ?? 'never'}</td><td>{t.expiresAt ?? 'never'}</td>
                <td class="id">{JSON.stringify(t.scopes)}</td>
                <td>{t.revokedAt === null && t.prefix !== undefined && <button type="button" class="secondary" aria-label={`Revoke ${t.prefix}`} onClick={() => revoke(t.prefix!)}>Revoke</button>}</td>
              </tr>
            ))}</tbody>
          </table>
        </div>
      ))}
    </section>
  );
}

function CreateAgent({ session, onCreated }: { session: Session; onCreated: () => Promise<void> }) {
  const [name, setName] = useState('');
  const [displayName, setDisplayName] = useState('');
  const [role, setRole] = useState<Role>('agent');
  const [outcome, run] = useAction();
  const submit = (event: Event): void => {
    event.preventDefault();
    void run(async () => {
      const agent = await session.client.createAgent({ name: name.trim(), displayName: displayName.trim(), role });
      setName('');
      setDisplayName('');
      await onCreated();
      return `Created agent ${agent.name} (${agent.role}).`;
    });
  };
  return (
    <section aria-labelledby="create-agent-heading">
      <h2 id="create-agent-heading">New agent</h2>
      <form onSubmit={submit}>
        <Field id="agent-name" label="Name">
          <input id="agent-name" required maxLength={64} pattern="[a-z0-9][a-z0-9\-]{0,63}" autoComplete="off" value={name} onInput={(e) => setName(e.currentTarget.value)}
            aria-describedby="agent-name-help" />
        </Field>
        <p id="agent-name-help" class="help">Lowercase letters, digits and hyphens.</p>
        <Field id="agent-display-name" label="Display name">
          <input id="agent-display-name" required maxLength={128} autoComplete="off" value={displayName} onInput={(e) => setDisplayName(e.currentTarget.value)} />
        </Field>
        <Field id="agent-role" label="Role">
          <select id="agent-role" value={role} onChange={(e) => setRole(e.currentTarget.value as Role)}>
            <option value="agent">agent</option>
            <option value="admin">admin</option>
          </select>
        </Field>
        <button type="submit">Create agent</button>
        <Result outcome={outcome} />
      </form>
    </section>
  );
}

function Tokens({ session, agents, onIssued }: { session: Session; agents: Agent[]; onIssued: () => void }) {
  const [agentText, setAgentText] = useState('');
  const [issued, setIssued] = useState<string | null>(null);
  const [prefix, setPrefix] = useState('');
  const [copied, setCopied] = useState(false);
  const [issueOutcome, runIssue] = useAction();
  const [revokeOutcome, runRevoke] = useAction();

  const issue = (event: Event): void => {
    event.preventDefault();
    setIssued(null);
    setCopied(false);
    void runIssue(async () => {
      const agent = findAgent(agents, agentText);
      if (!agent) throw new Error(`No agent named "${agentText.trim()}".`);
      const token = await session.client.issueToken(agent.id);
      // Shown once: it lives in this component's state only and is gone when the view changes.
      setIssued(token.token);
      onIssued();
      return `Issued token ${token.prefix} for ${agent.name}. Copy it now: it is not shown again.`;
    });
  };
  const copy = async (): Promise<void> => {
    if (issued === null) return;
    await navigator.clipboard.writeText(issued).then(() => setCopied(true), () => {
      // No clipboard (a page not served over HTTPS or localhost): the token is selected to copy by hand.
      const field = document.getElementById('new-token') as HTMLInputElement | null;
      field?.select();
    });
  };
  const revoke = (event: Event): void => {
    event.preventDefault();
    void runRevoke(async () => {
      await session.client.revokeToken(prefix.trim());
      const revoked = prefix.trim();
      setPrefix('');
      onIssued();
      return `Revoked ${revoked}.`;
    });
  };

  return (
    <section aria-labelledby="tokens-heading">
      <h2 id="tokens-heading">API tokens</h2>
      <form onSubmit={issue}>
        <Field id="token-agent" label="Agent">
          <input id="token-agent" list="agent-names" required autoComplete="off" value={agentText} onInput={(e) => setAgentText(e.currentTarget.value)} />
        </Field>
        <button type="submit">Issue token</button>
        <Result outcome={issueOutcome} />
        {issued !== null && (
          <div class="issued">
            <Field id="new-token" label="New API token">
              <input id="new-token" readOnly value={issued} onFocus={(e) => e.currentTarget.select()} />
            </Field>
            <button type="button" onClick={() => void copy()}>Copy token</button>
            <span role="status">{copied ? 'Copied.' : ''}</span>
          </div>
        )}
      </form>
      <form onSubmit={revoke}>
        <Field id="token-prefix" label="Token prefix">
          <input id="token-prefix" required autoComplete="off" placeholder="agt_…" value={prefix} onInput={(e) => setPrefix(e.currentTarget.value)} />
        </Field>
        <button type="submit">Revoke</button>
        <Result outcome={revokeOutcome} />
      </form>
    </section>
  );
}

function Rooms({ session, agents, rooms, onChanged }: { session: Session; agents: Agent[]; rooms: Room[]; onChanged: () => Promise<void> }) {
  const { client } = session;
  const [slug, setSlug] = useState('');
  const [name, setName] = useState('');
  const [roomText, setRoomText] = useState('');
  const [memberText, setMemberText] = useState('');
  const [createOutcome, runCreate] = useAction();
  const [memberOutcome, runMember] = useAction();

  const create = (event: Event): void => {
    event.preventDefault();
    void runCreate(async () => {
      const room = await client.createRoom({ slug: slug.trim(), name: name.trim() });
      setSlug('');
      setName('');
      await onChanged();
      return `Created room ${room.name} (${room.slug}).`;
    });
  };
  const membership = (action: 'add' | 'remove'): void => {
    void runMember(async () => {
      const room = findRoom(rooms, roomText);
      if (!room) throw new Error(`No room with the slug "${roomText.trim()}".`);
      const agent = findAgent(agents, memberText);
      if (!agent) throw new Error(`No agent named "${memberText.trim()}".`);
      if (action === 'add') await client.addMember(room.id, agent.id);
      else await client.removeMember(room.id, agent.id);
      return action === 'add' ? `Added ${agent.name} to ${room.slug}.` : `Removed ${agent.name} from ${room.slug}.`;
    });
  };

  return (
    <section aria-labelledby="rooms-admin-heading">
      <h2 id="rooms-admin-heading">Rooms and members</h2>
      <form onSubmit={create}>
        <Field id="room-slug" label="Slug">
          <input id="room-slug" required maxLength={64} pattern="[a-z0-9][a-z0-9\-]{0,63}" autoComplete="off" value={slug} onInput={(e) => setSlug(e.currentTarget.value)} />
        </Field>
        <Field id="room-name" label="Room name">
          <input id="room-name" required maxLength={128} autoComplete="off" value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </Field>
        <button type="submit">Create room</button>
        <Result outcome={createOutcome} />
      </form>
      <form onSubmit={(e) => { e.preventDefault(); membership('add'); }}>
        <Field id="member-room" label="Room">
          <input id="member-room" list="room-slugs" required autoComplete="off" value={roomText} onInput={(e) => setRoomText(e.currentTarget.value)} />
        </Field>
        <Field id="member-agent" label="Member">
          <input id="member-agent" list="agent-names" required autoComplete="off" value={memberText} onInput={(e) => setMemberText(e.currentTarget.value)} />
        </Field>
        <div class="buttons">
          <button type="submit">Add member</button>
          <button type="button" class="secondary" onClick={() => membership('remove')}>Remove member</button>
        </div>
        <Result outcome={memberOutcome} />
      </form>
    </section>
  );
}
