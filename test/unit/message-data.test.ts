import { describe, expect, it } from 'vitest';
import { MESSAGE_DATA_MAX_BYTES, messageDataProblem } from '@agent-messaging/protocol';

// docs/protocol.md, Messages: the rule a send's `data` is checked by, including the values JSON
// cannot carry (the WebSocket and MCP transports hand over objects, not text).

const nested = (depth: number): Record<string, unknown> => {
  let inner: Record<string, unknown> = {};
  for (let d = 1; d < depth; d++) inner = { a: inner };
  return inner;
};

describe('messageDataProblem', () => {
  it('takes objects up to 16 levels deep and 32,768 bytes of compact UTF-8 JSON', () => {
    expect(messageDataProblem({})).toBeNull();
    expect(messageDataProblem(nested(16))).toBeNull();
    expect(messageDataProblem({ a: [[[]]] })).toBeNull();
    expect(messageDataProblem({ x: 'a'.repeat(MESSAGE_DATA_MAX_BYTES - 8) })).toBeNull();
    expect(messageDataProblem({ x: '€'.repeat((MESSAGE_DATA_MAX_BYTES - 8) / 4) })).toBeNull(); // 3 bytes each, within
  });

  it('refuses anything else, naming the rule', () => {
    expect(messageDataProblem(nested(17))).toMatch(/16 levels/);
    expect(messageDataProblem({ x: 'a'.repeat(MESSAGE_DATA_MAX_BYTES - 7) })).toMatch(/32768 bytes/);
    expect(messageDataProblem({ x: '€'.repeat(MESSAGE_DATA_MAX_BYTES / 3) })).toMatch(/32768 bytes/);
    // A character outside the BMP is 4 bytes (a surrogate pair in the string): 8 + 4 n bytes in all.
    expect(messageDataProblem({ x: '😀'.repeat((MESSAGE_DATA_MAX_BYTES - 8) / 4) })).toBeNull();
    expect(messageDataProblem({ x: '😀'.repeat((MESSAGE_DATA_MAX_BYTES - 8) / 4 + 1) })).toMatch(/is 32772\)/);
    for (const value of [[], 'x', 1, true, null, undefined]) expect(messageDataProblem(value)).toMatch(/JSON object/);
    expect(messageDataProblem({ n: Infinity })).toMatch(/finite/);
    expect(messageDataProblem({ n: Number.NaN })).toMatch(/finite/);
    expect(messageDataProblem({ when: new Date() })).toMatch(/JSON values/);
    expect(messageDataProblem({ f: () => 1 })).toMatch(/JSON values/);
    expect(messageDataProblem({ big: 1n })).toMatch(/JSON values/);
  });

  it('stops at the depth limit without walking a hostile nesting', () => {
    let deep: unknown = {};
    for (let d = 0; d < 100_000; d++) deep = [deep];
    expect(messageDataProblem({ deep })).toMatch(/16 levels/);
  });
});
