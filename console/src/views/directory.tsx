import { useEffect, useState } from 'preact/hooks';
import { describeError, learnNames, type DirectoryEntry, type Session } from '../session.js';

/** Every agent, its role and whether it is online now; **Message** opens the direct room with another. */
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
            <thead><tr><th scope="col">Display name</th><th scope="col">Name</th><th scope="col">Role</th><th scope="col">Status</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
            <tbody>
              {agents.map((a) => (
                <tr key={a.id}>
                  <th scope="row">{a.displayName}</th>
                  <td>{a.name}</td>
                  <td>{a.role}</td>
                  <td><span class={a.online ? 'state online' : 'state offline'}>{a.online ? 'online' : 'offline'}</span></td>
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
