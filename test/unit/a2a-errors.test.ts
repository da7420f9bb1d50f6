import { describe, expect, it } from 'vitest';
import { A2AError, RequestMalformedError, TaskNotFoundError, UnsupportedOperationError } from '@a2a-js/sdk/errors';
import { toPublicA2aError } from '../../src/a2a/request-handler.js';
import { AppError, ERROR_CATALOG, type ErrorCode } from '../../src/errors.js';

describe('A2A errors through the catalog', () => {
  it('a database outage met inside a call is UNAVAILABLE (the driver error classified), not an internal error; nothing logged', () => {
    const logged: unknown[] = [];
    const outage = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    const answer = toPublicA2aError(outage, (err) => logged.push(err));
    expect(answer).toBeInstanceOf(Error);
    expect((answer as Error).message).toBe('UNAVAILABLE: Database unavailable');
    expect(logged).toEqual([]);
  });

  it('a wait-cap refusal keeps its code and text; an unexpected failure says nothing of its cause and is logged', () => {
    const logged: unknown[] = [];
    const capped = toPublicA2aError(new AppError('RATE_LIMITED', 'Too many waiting requests for this agent (at most 2 at once)'), (err) => logged.push(err));
    expect((capped as Error).message).toBe('RATE_LIMITED: Too many waiting requests for this agent (at most 2 at once)');
    const bug = new TypeError('x is undefined');
    expect((toPublicA2aError(bug, (err) => logged.push(err)) as Error).message).toBe('Internal error');
    expect(logged).toEqual([bug]);
  });

  it('every catalog code reaches an A2A caller as its a2a column says: the protocol error, the coded text, or nothing of the cause', () => {
    const expected: Record<(typeof ERROR_CATALOG)[ErrorCode]['a2a'], (answer: unknown, code: ErrorCode) => void> = {
      'invalid-params': (answer) => expect(answer).toBeInstanceOf(RequestMalformedError),
      'task-not-found': (answer) => expect(answer).toBeInstanceOf(TaskNotFoundError),
      conflict: (answer) => expect(answer).toBeInstanceOf(UnsupportedOperationError),
      unsupported: (answer) => expect(answer).toBeInstanceOf(UnsupportedOperationError),
      coded: (answer, code) => expect((answer as Error).message).toBe(`${code}: the text`),
      internal: (answer) => expect((answer as Error).message).toBe('Internal error'),
    };
    for (const code of Object.keys(ERROR_CATALOG) as ErrorCode[]) {
      const logged: unknown[] = [];
      const answer = toPublicA2aError(new AppError(code, 'the text'), (err) => logged.push(err));
      const kind = ERROR_CATALOG[code].a2a;
      expected[kind](answer, code);
      expect(answer instanceof A2AError).toBe(kind !== 'coded' && kind !== 'internal');
      expect(logged.length).toBe(kind === 'internal' ? 1 : 0);
    }
  });
});
