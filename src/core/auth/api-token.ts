import { randomBytes } from 'node:crypto';

/**
 * API token format: `agt_<prefix>_<secret>`. The prefix (12 lowercase hex characters, 48 bits)
 * is the lookup key and is stored in clear as `agt_<prefix>`; the secret (32 random bytes as 64 hex
 * characters, 256 bits) is stored only as an Argon2id hash.
 */
const TOKEN_RE = /^agt_([0-9a-f]{12})_([0-9a-f]{64})$/;
const PREFIX_RE = /^agt_[0-9a-f]{12}$/;

export interface ApiTokenParts {
  /** `agt_<prefix>`, as stored and as used to revoke. */
  prefix: string;
  secret: string;
}

export function generateApiToken(): ApiTokenParts & { token: string } {
  const prefix = `agt_${randomBytes(6).toString('hex')}`;
  const secret = randomBytes(32).toString('hex');
  return { prefix, secret, token: `${prefix}_${secret}` };
}

/** Null when the string is not shaped like an API token. */
export function parseApiToken(token: string): ApiTokenParts | null {
  const match = TOKEN_RE.exec(token);
  if (!match) return null;
  return { prefix: `agt_${match[1]!}`, secret: match[2]! };
}

export const looksLikeApiToken = (value: string): boolean => value.startsWith('agt_');
export const isTokenPrefix = (value: string): boolean => PREFIX_RE.test(value);
