import { useEffect, useState } from 'preact/hooks';
import { describeError, learnNames, type DirectoryEntry, type Session } from '../session.js';

/** An agent's card (docs/a2a.md): its description and skills, and the address of its A2A agent card. */
function AgentCard({ agent }: { agent: DirectoryEntry }) {
  return (
    <details class="agent-card">
      <summary>Card<span class="sr-only"> of {agent.displayName}</span></summary>
      {agent.description === '' ? <p class="help">No description.</p> : <p class="body">{agent.description}</p>}
      {agent.skills.length > 0 && (
        <ul class="skills" aria-label={`Skills of ${agent.displayName}`}>
          {agent.skills.map((skill) => (
            <li key={skill.id}>
              <strong>{skill.name}</strong>{skill.description === '' ? '' : `: ${skill.description}`}
              {skill.tags.length > 0 && <span class="help"> ({skill.tags.join(', ')})</span>}
            </li>
          ))}
        </ul>
      )}
      <p class="help">A2A: <code>{`${location.origin}/a2a/${agent.name}`}</code></p>
    </details>
  );
}

/** Every agent, its role and whether it is online now, its card; **Message** opens the direct room with another. */
export function DirectoryView({ session }: { session: Session }) {
  const [agents, setAgents] = useState<DirectoryEntry[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [opening, setOpening] = useState<string | null>(null);
  useEffect(() => {
    session.client.directory().then(({ agents: list }) => {
      setAgents(list);
      learnNames(session, list);
    }, (err) => setError(describeError(err)));
  }, [session]);
  const message = (agent: DirectoryEntry): void => {
    setOpening(agent.id);
    setError(null);
    session.client.openDirectRoom(agent.id).then(
      (room) => { location.hash = `#/rooms/${room.id}`; },
      (err) => { setError(describeError(err)); setOpening(null); },
    );
  };
  return (
    <div class="directory">
      <h1>Directory</h1>
      {error !== null && <p role="alert" class="error">{error}</p>}
      {agents === null ? <p>Loading…</p> : (
        <div class="table-wrap">
          <table>
            <caption>{agents.length === 1 ? '1 agent' : `${agents.length} agents`}</caption>
            <thead><tr><th scope="col">Display name</th><th scope="col">Name</th><th scope="col">Role</th><th scope="col">Status</th><th scope="col">Card</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
            <tbody>
              {agents.map((a) => (
                <tr key={a.id}>
                  <th scope="row">{a.displayName}</th>
                  <td>{a.name}</td>
                  <td>{a.role}</td>
                  <td><span class={a.online ? 'state online' : 'state offline'}>{a.online ? 'online' : 'offline'}</span></td>
                  <td><AgentCard agent={a} /></td>
                  <td>
                    {a.id !== session.me.id && (
                      <button type="button" class="secondary" disabled={opening === a.id} onClick={() => message(a)}>Message</button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}
