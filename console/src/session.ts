import { AmsClient, AmsError, type Directory } from '@agent-messaging/client';

export type Role = 'admin' | 'agent';
export type DirectoryEntry = Directory['agents'][number];

/** The signed-in person: the client (which holds the JWT, in memory only) and who they are. */
export interface Session {
  client: AmsClient;
  me: { id: string; name: string; displayName: string; role: Role };
  /** agentId -> display name, from the directory; unknown ids fall back to the id. */
  names: Map<string, string>;
  /** Agent name -> display name, from the directory (a direct room is named by its agents' names). */
  displayNames: Map<string, string>;
}

/** The deployment's company id, put in the page by the server as a meta tag (no inline script). */
function companyId(): string {
  return document.querySelector<HTMLMetaElement>('meta[name="ams-company-id"]')?.content || 'default';
}

export function namesOf(directory: DirectoryEntry[]): Map<string, string> {
  return new Map(directory.map((a) => [a.id, a.displayName]));
}

/** What the session knows of agents' names, from a fresh directory. */
export function learnNames(session: Session, directory: DirectoryEntry[]): void {
  for (const a of directory) {
    session.names.set(a.id, a.displayName);
    session.displayNames.set(a.name, a.displayName);
  }
}

/**
 * Signs in with an API token: the client exchanges it for a JWT (renewed before `exp`, kept in
 * memory only) and connects; the hello names the agent, the directory says who it is.
 */
export async function signIn(apiToken: string): Promise<Session> {
  const client = new AmsClient({ url: location.origin, apiToken, companyId: companyId() });
  let agentId = '';
  const offHello = client.on('connect', (hello) => { agentId = hello.agentId; });
  try {
    await client.connect();
    const directory = (await client.directory()).agents;
    const me = directory.find((a) => a.id === agentId);
    if (!me) throw new AmsError('NOT_FOUND', 'This agent is not in the directory');
    return {
      client, me: { id: me.id, name: me.name, displayName: me.displayName, role: me.role },
      names: namesOf(directory), displayNames: new Map(directory.map((a) => [a.name, a.displayName])),
    };
  } catch (err) {
    await client.close();
    throw err;
  } finally {
    offHello();
  }
}

/** What a failure says to the person: a refused token is "invalid" (the sign-in contract). */
export function describeError(err: unknown): string {
  if (err instanceof AmsError) {
    if (err.status === 401 || err.code === 'AUTH_FAILED') return 'The API token is invalid, revoked or expired.';
    if (err.code === 'FORBIDDEN') return `Not allowed: ${err.message}`;
    if (err.code === 'NETWORK_ERROR' || err.code === 'TIMEOUT') return 'The service cannot be reached; try again.';
    return err.message;
  }
  return err instanceof Error ? err.message : String(err);
}

export const nameOf = (session: Session, agentId: string): string => session.names.get(agentId) ?? agentId;

/**
 * What a room is called here: a direct room by the other agent's display name (its `name` is the two
 * agents' names joined by ", "), a group room by its name.
 */
export function roomTitle(session: Session, room: { kind: string; name: string }): string {
  if (room.kind !== 'direct') return room.name;
  const other = peerName(session, room);
  return session.displayNames.get(other) ?? other;
}

/** The other agent's name of a direct room. */
export const peerName = (session: Session, room: { name: string }): string => room.name.split(', ').find((n) => n !== session.me.name) ?? session.me.name;

export function formatTime(iso: string): string {
  return new Date(iso).toLocaleString(undefined, { dateStyle: 'short', timeStyle: 'short' });
}
