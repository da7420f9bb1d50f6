import { AppError, toPublicError } from '../errors.js';
import { isInvalidValue, isStorageUnavailable } from './driver-errors.js';

export { isForeignKeyViolation, isInvalidValue, isStorageUnavailable, isUniqueViolation } from './driver-errors.js';

/**
 * Rethrows driver errors as AppErrors where they mean something to a client (see toPublicError,
 * which does the mapping); any other error is returned as it is.
 */
export function classifyStorageError(err: unknown): unknown {
  return err instanceof AppError || isStorageUnavailable(err) || isInvalidValue(err) ? toPublicError(err) : err;
}
