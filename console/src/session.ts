import { AmsClient, AmsError, type DirectoryEntry, type Role } from './ams.js';

/** The signed-in person: the client (which holds the JWT, in memory only) and who they are. */
export interface Session {
  client: AmsClient;
  me: { id: string; displayName: string; role: Role };
  companyId: string;
  /** agentId -> display name, from the directory; unknown ids fall back to the id. */
  names: Map<string, string>;
}

/** The deployment's company id, put in the page by the server as a meta tag (no inline script). */
export function companyId(): string {
  return document.querySelector<HTMLMetaElement>('meta[name="ams-company-id"]')?.content || 'default';
}

export function namesOf(directory: DirectoryEntry[]): Map<string, string> {
  return new Map(directory.map((a) => [a.id, a.displayName]));
}

/** Signs in with an API token: the token is exchanged for a JWT and the socket connects. */
export async function signIn(apiToken: string): Promise<Session> {
  const client = new AmsClient({ url: location.origin, apiToken });
  await client.connect();
  try {
    const company = companyId();
    const directory = await client.directory(company);
    const me = directory.find((a) => a.id === client.agentId);
    return {
      client,
      me: { id: client.agentId, displayName: me?.displayName ?? client.agentId, role: client.role },
      companyId: company,
      names: namesOf(directory),
    };
  } catch (err) {
    await client.close();
    throw err;
  }
}

/** What a failure says to the person: a bad token is "invalid" (the sign-in contract). */
export function describeError(err: unknown): string {
  if (err instanceof AmsError) {
    if (err.status === 401 || err.code === 'UNAUTHENTICATED' || err.code === 'AUTH_FAILED') return 'The API token is invalid, revoked or expired.';
    if (err.status === 403 || err.code === 'FORBIDDEN') return `Not allowed: ${err.message}`;
    if (err.code === 'NETWORK_ERROR') return 'The service cannot be reached; try again.';
    return err.message;
  }
  return err instanceof Error ? err.message : String(err);
}

export const nameOf = (session: Session, agentId: string): string => session.names.get(agentId) ?? agentId;

export function formatTime(iso: string): string {
  return new Date(iso).toLocaleString(undefined, { dateStyle: 'short', timeStyle: 'short' });
}
