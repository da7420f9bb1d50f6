import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PRESENCE_SCRIPTS } from '../../src/presence/lua-scripts.js';
import { ensureBuilt, ROOT } from '../helpers/build.js';

const LUA = join(ROOT, 'src', 'presence', 'lua');

describe('the Redis presence scripts', () => {
  it('are the lua/ files, each after the shared prelude, and no file is left unused', () => {
    const prelude = readFileSync(join(LUA, 'prelude.lua'), 'utf8');
    const bodies = Object.values(PRESENCE_SCRIPTS);
    for (const script of bodies) expect(script.startsWith(prelude)).toBe(true);
    const files = readdirSync(LUA).filter((f) => f !== 'prelude.lua');
    const used = files.filter((f) => bodies.some((s) => s.endsWith(`\n${readFileSync(join(LUA, f), 'utf8')}`)));
    expect(used.sort()).toEqual(files.sort());
    expect(bodies).toHaveLength(files.length);
  });

  it('are copied next to the compiled module, so the built server loads them', async () => {
    await ensureBuilt();
    const built = join(ROOT, 'dist', 'presence', 'lua');
    for (const file of readdirSync(LUA)) expect(readFileSync(join(built, file), 'utf8')).toBe(readFileSync(join(LUA, file), 'utf8'));
  }, 180_000);
});
