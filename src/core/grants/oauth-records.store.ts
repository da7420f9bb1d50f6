import { createHash } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { DB } from '../../store/schema.js';

/**
 * The authorization server's storage (docs/oauth.md): what the OAuth library keeps (clients,
 * interactions, sessions, authorization codes, access and refresh tokens, grants) as rows of
 * `oauth_records`, through the library's adapter interface (a class per kind of record).
 *
 * A row's key is a SHA-256 of its kind and id, so a lookup by a token's value finds its row while the
 * value itself is not stored: the id of a code or token is the secret the client holds, and it is
 * taken out of the stored payload (`jti`) and put back from the id looked up with.
 */

/** The payload the library hands over; opaque here but for the fields the lookups need. */
export type RecordPayload = Record<string, unknown> & { grantId?: string; uid?: string; jti?: string; consumed?: unknown };

/** The library's adapter interface (one instance per kind of record). */
export interface RecordAdapter {
  upsert(id: string, payload: RecordPayload, expiresIn?: number): Promise<void>;
  find(id: string): Promise<RecordPayload | undefined>;
  findByUserCode(userCode: string): Promise<RecordPayload | undefined>;
  findByUid(uid: string): Promise<RecordPayload | undefined>;
  consume(id: string): Promise<void>;
  destroy(id: string): Promise<void>;
  revokeByGrantId(grantId: string): Promise<void>;
}

/** Kinds whose id is a bearer secret: stored without it. */
const SECRET_IDS = new Set(['AccessToken', 'RefreshToken', 'AuthorizationCode', 'RegistrationAccessToken', 'ClientCredentials', 'DeviceCode', 'BackchannelAuthenticationRequest']);

export const recordKey = (model: string, id: string): string => createHash('sha256').update(`${model}:${id}`).digest('base64url');

/** Expired rows are deleted now and then, by whichever node writes (deleting twice is harmless). */
const SWEEP_EVERY_WRITES = 200;

export interface RecordAdapterOptions {
  /** Whether a grant may still be used (its agent enabled, its API token live): a grant that may not is not found. */
  liveGrant?: (grantId: string) => Promise<boolean>;
  now?: () => number;
}

export function createRecordAdapterClass(db: Kysely<DB>, options: RecordAdapterOptions = {}): new (model: string) => RecordAdapter {
  const now = options.now ?? Date.now;
  const { liveGrant } = options;
  let writes = 0;
  const sweep = async (): Promise<void> => {
    await db.deleteFrom('oauth_records').where('expires_at', '<', now()).execute();
  };

  const read = async (key: string, id: string | null): Promise<RecordPayload | undefined> => {
    const row = await db.selectFrom('oauth_records').select(['payload', 'expires_at', 'consumed_at']).where('key', '=', key).executeTakeFirst();
    if (row === undefined) return undefined;
    if (row.expires_at !== null && Number(row.expires_at) <= now()) return undefined;
    const payload = JSON.parse(row.payload) as RecordPayload;
    if (id !== null && payload.jti === undefined) payload.jti = id;
    if (row.consumed_at !== null) payload.consumed = Math.floor(Number(row.consumed_at) / 1000);
    return payload;
  };

  return class DatabaseRecordAdapter implements RecordAdapter {
    constructor(private readonly model: string) {}

    async upsert(id: string, payload: RecordPayload, expiresIn?: number): Promise<void> {
      const key = recordKey(this.model, id);
      const stored: RecordPayload = { ...payload };
      if (SECRET_IDS.has(this.model)) delete stored.jti;
      const values = {
        model: this.model,
        // A grant's own record carries its id, so ending a grant deletes it with its tokens.
        grant_id: this.model === 'Grant' ? id : typeof payload.grantId === 'string' ? payload.grantId : null,
        uid: typeof payload.uid === 'string' ? recordKey(this.model, payload.uid) : null,
        payload: JSON.stringify(stored),
        expires_at: expiresIn === undefined ? null : now() + expiresIn * 1000,
      };
      await db.insertInto('oauth_records').values({ key, ...values }).onConflict((oc) => oc.column('key').doUpdateSet(values)).execute();
      if (++writes % SWEEP_EVERY_WRITES === 0) await sweep();
    }

    async find(id: string): Promise<RecordPayload | undefined> {
      const payload = await read(recordKey(this.model, id), id);
      if (payload !== undefined && this.model === 'Grant' && liveGrant !== undefined && !(await liveGrant(id))) return undefined;
      return payload;
    }

    async findByUserCode(): Promise<RecordPayload | undefined> {
      return undefined; // the device flow is not offered
    }

    async findByUid(uid: string): Promise<RecordPayload | undefined> {
      const row = await db.selectFrom('oauth_records').select('key').where('uid', '=', recordKey(this.model, uid)).where('model', '=', this.model).executeTakeFirst();
      return row === undefined ? undefined : read(row.key, null);
    }

    async consume(id: string): Promise<void> {
      await db.updateTable('oauth_records').set({ consumed_at: now() }).where('key', '=', recordKey(this.model, id)).execute();
    }

    async destroy(id: string): Promise<void> {
      await db.deleteFrom('oauth_records').where('key', '=', recordKey(this.model, id)).execute();
    }

    async revokeByGrantId(grantId: string): Promise<void> {
      await db.deleteFrom('oauth_records').where('grant_id', '=', grantId).where('model', '=', this.model).execute();
    }
  };
}

/**
 * An access token's record, read directly by `/mcp` on every request: its grant, scope and audience,
 * or null when there is none, it expired, or it was revoked.
 */
export async function findAccessToken(db: Kysely<DB>, token: string, now: number): Promise<{ grantId: string; scope: string; aud: unknown } | null> {
  const row = await db.selectFrom('oauth_records').select(['payload', 'expires_at']).where('key', '=', recordKey('AccessToken', token)).executeTakeFirst();
  if (row === undefined || (row.expires_at !== null && Number(row.expires_at) <= now)) return null;
  const payload = JSON.parse(row.payload) as RecordPayload;
  if (typeof payload.grantId !== 'string') return null;
  return { grantId: payload.grantId, scope: typeof payload.scope === 'string' ? payload.scope : '', aud: payload.aud };
}

/** Ends every record of a grant (its codes, access and refresh tokens, the grant itself). */
export async function deleteGrantRecords(db: Kysely<DB>, grantId: string): Promise<void> {
  await db.deleteFrom('oauth_records').where('grant_id', '=', grantId).execute();
}
