import { describe, expect, it } from 'vitest';
import { toPublicA2aError } from '../../src/a2a/request-handler.js';
import { AppError } from '../../src/errors.js';

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
});
