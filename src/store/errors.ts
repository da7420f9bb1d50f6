export { isForeignKeyViolation, isInvalidValue, isStorageUnavailable, isUniqueViolation } from './driver-errors.js';
