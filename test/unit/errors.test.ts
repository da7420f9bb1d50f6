import SQLite from 'better-sqlite3';
import { errorCodes } from 'fastify';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { AppError, classifyStorageError, toPublicError, validationError } from '../../src/errors.js';

/** The public form as a client sees it: status, WebSocket code, message, details. */
const seen = (err: unknown) => {
  const e = toPublicError(err);
  return { status: e.status, ws: e.wsCode, message: e.message, details: e.details };
};

function pgError(code: string, message: string): Error {
  const err = new pg.DatabaseError(message, message.length, 'error');
  err.code = code;
  return err;
}

describe('toPublicError: the one mapping for REST and WebSocket', () => {
  it('returns an AppError as it is', () => {
    const err = validationError({ name: 'is required' });
    expect(toPublicError(err)).toBe(err);
    expect(seen(new AppError('ROOM_NOT_FOUND', 'Room not found'))).toEqual({ status: 404, ws: 'ROOM_NOT_FOUND', message: 'Room not found', details: undefined });
  });

  it('turns SQLite outages into 503 UNAVAILABLE', () => {
    for (const code of ['SQLITE_BUSY', 'SQLITE_FULL', 'SQLITE_IOERR_WRITE', 'SQLITE_READONLY']) {
      expect(seen(new SQLite.SqliteError('database is locked', code)), code).toEqual({ status: 503, ws: 'UNAVAILABLE', message: 'Database unavailable', details: undefined });
    }
    const db = new SQLite(':memory:');
    db.close();
    let closed: unknown;
    try {
      db.prepare('select 1');
    } catch (err) {
      closed = err;
    }
    expect(toPublicError(closed).status).toBe(503);
  });

  it('turns PostgreSQL outages into 503 UNAVAILABLE: server codes, lost connections, refused connections', async () => {
    const cases: [string, string][] = [['57P01', 'terminating connection due to administrator command'], ['53300', 'too many connections'], ['08006', 'connection failure'], ['57014', 'canceling statement due to statement timeout']];
    for (const [code, message] of cases) {
      expect(toPublicError(pgError(code, message)).status, code).toBe(503);
    }
    expect(toPublicError(new Error('Connection terminated unexpectedly')).status).toBe(503);
    // A real refused connection (nothing listens on port 1): Node reports ECONNREFUSED, possibly
    // inside an AggregateError (one per address tried).
    const client = new pg.Client({ connectionString: 'postgres://postgres@127.0.0.1:1/none', connectionTimeoutMillis: 2000 });
    const refused = await client.connect().then(() => null, (err: unknown) => err);
    expect(refused).not.toBeNull();
    expect(seen(refused)).toEqual({ status: 503, ws: 'UNAVAILABLE', message: 'Database unavailable', details: undefined });
  });

  it('turns a value the engine refuses into 400, and keeps other driver errors internal', () => {
    expect(seen(pgError('22P02', 'invalid input syntax for type uuid: "x"'))).toMatchObject({ status: 400, message: 'A value in the request is not valid' });
    expect(seen(new SQLite.SqliteError('CHECK constraint failed', 'SQLITE_CONSTRAINT_CHECK'))).toMatchObject({ status: 400 });
    // A unique violation the service did not handle is a bug of ours: 500, nothing of the driver's message.
    expect(seen(pgError('23505', 'duplicate key value violates unique constraint "agents_name_key"'))).toEqual({ status: 500, ws: 'INTERNAL', message: 'Internal Server Error', details: undefined });
  });

  it('turns the HTTP layer\'s client errors into their catalog entry', () => {
    expect(seen(new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE())).toMatchObject({ status: 413, message: 'Request body is larger than this endpoint accepts' });
    expect(seen(new errorCodes.FST_ERR_CTP_INVALID_MEDIA_TYPE())).toMatchObject({ status: 415, message: 'Content-Type must be application/json' });
    expect(seen(new errorCodes.FST_ERR_CTP_INVALID_CONTENT_LENGTH())).toMatchObject({ status: 400 });
    expect(seen(new errorCodes.FST_ERR_CTP_EMPTY_JSON_BODY())).toMatchObject({ status: 400, message: 'Malformed JSON body' });
    expect(seen(new errorCodes.FST_ERR_CTP_INVALID_JSON_BODY())).toMatchObject({ status: 400, message: 'Malformed JSON body' });
    expect(seen(new errorCodes.FST_ERR_BAD_URL('/%80'))).toMatchObject({ status: 400, message: 'Malformed URL' });
    expect(seen(Object.assign(new Error('Header overflow'), { code: 'HPE_HEADER_OVERFLOW' }))).toMatchObject({ status: 431, message: 'Request headers are too large' });
    expect(seen(Object.assign(new Error('Invalid method'), { code: 'HPE_INVALID_METHOD' }))).toMatchObject({ status: 400, message: 'Bad Request' });
    expect(seen(Object.assign(new SyntaxError('Unexpected token'), { statusCode: 400 }))).toMatchObject({ status: 400, message: 'Malformed JSON body' });
  });

  it('gives anything else a bare 500 INTERNAL with no detail of its own', () => {
    for (const err of [new Error('secret path /src/x.ts:1:2'), new TypeError('x is undefined'), new SyntaxError('our own JSON.parse bug'), 'a string', null, undefined, { code: 42 }]) {
      expect(seen(err)).toEqual({ status: 500, ws: 'INTERNAL', message: 'Internal Server Error', details: undefined });
    }
  });

  it('classifyStorageError rethrows through the same mapping and leaves other errors alone', () => {
    const outage = classifyStorageError(new SQLite.SqliteError('database is locked', 'SQLITE_BUSY'));
    expect(outage).toBeInstanceOf(AppError);
    expect((outage as AppError).status).toBe(503);
    const bug = new Error('bug');
    expect(classifyStorageError(bug)).toBe(bug);
  });
});
