import { CompiledQuery } from 'kysely';

/**
 * TEST ONLY. A place inside a transaction of statements (commitStatements) where it stops, open,
 * until `wait` settles: the statements before it have run, the ones after it not yet. It exists
 * only when a test variable asks for it (AMS_TEST_PAUSE_TASK_MOVE, docs/tasks.md): the crash test
 * kills the process there to show that a task's move and its message are one commit. Nothing else
 * creates one.
 */
const pauses = new WeakMap<CompiledQuery, () => Promise<void>>();

export function pauseStatement(wait: () => Promise<void>): CompiledQuery {
  // Never run: commitStatements and writeBatch recognise it and wait instead.
  const statement = CompiledQuery.raw('select 1 /* test pause */');
  pauses.set(statement, wait);
  return statement;
}

/** The wait of a pause statement; undefined for any other statement. */
export const pauseOf = (statement: CompiledQuery): (() => Promise<void>) | undefined => pauses.get(statement);
