import { describe, expect, it } from 'vitest';
import { fromHttpError, HTTP_STATUS_CODES } from '../../packages/client/src/errors.js';
import { renewalDelay } from '../../packages/client/src/session.js';
import { ERROR_CATALOG } from '../../src/errors.js';

describe('the client library', () => {
  it("maps each HTTP status to the WebSocket code the service's catalog gives it", () => {
    for (const { status, ws } of Object.values(ERROR_CATALOG)) {
      // 404 has two codes: NOT_FOUND, and ROOM_NOT_FOUND told apart by its message.
      if (status === 404) continue;
      expect(HTTP_STATUS_CODES[status], `HTTP ${status}`).toBe(ws);
    }
    expect(fromHttpError(404, { error: 'Room not found' })).toMatchObject({ status: 404, code: 'ROOM_NOT_FOUND' });
    expect(fromHttpError(404, { error: 'Agent not found' })).toMatchObject({ status: 404, code: 'NOT_FOUND' });
    expect(fromHttpError(400, { error: 'Validation failed', details: { body: 'too long' } })).toMatchObject({ code: 'VALIDATION_ERROR', details: { body: 'too long' } });
    expect(fromHttpError(502, 'bad gateway')).toMatchObject({ status: 502, code: 'INTERNAL', message: 'HTTP 502' });
  });

  it('renews a JWT 60 s before exp, or at 80% of a short lifetime', () => {
    expect(renewalDelay(900_000)).toBe(840_000);
    expect(renewalDelay(121_000)).toBe(61_000);
    expect(renewalDelay(100_000)).toBe(80_000);
    expect(renewalDelay(5_000)).toBe(4_000);
    expect(renewalDelay(-1_000)).toBe(0);
  });
});
