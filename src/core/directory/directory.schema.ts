import { ROLES, type Role } from '../principal.js';
import { validationError } from '../../errors.js';

/** The `role` filter of the directory: absent or empty means every role. */
export function parseRoleFilter(raw: unknown): Role | undefined {
  if (raw === undefined || raw === '') return undefined;
  if (typeof raw !== 'string') throw validationError({ role: 'must be given once' });
  if (!(ROLES as readonly string[]).includes(raw)) throw validationError({ role: `must be one of ${ROLES.map((r) => JSON.stringify(r)).join(', ')}` });
  return raw as Role;
}
