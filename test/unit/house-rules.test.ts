import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/build.js';

/**
 * The rules of the house that hold the architecture together (docs/architecture.md): core/ stays
 * transport-free (an ESLint rule), and no module imports itself back through others, type-only
 * imports included (a cycle makes load order matter and the layers meaningless).
 */

const SRC = join(ROOT, 'src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** Relative imports of a file (static, type-only, re-exports and dynamic), resolved to .ts files. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specifiers = [...text.matchAll(/(?:from\s+|import\s*\(\s*|import\s+)'(\.{1,2}\/[^']+)'/g)].map((m) => m[1]!);
  return specifiers.map((s) => resolve(dirname(file), s.replace(/\.js$/, '.ts')));
}

/** Every cycle in the graph, each as the list of files around it (Tarjan's strongly connected components). */
function cycles(graph: Map<string, string[]>): string[][] {
  let index = 0;
  const indexes = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string): void => {
    indexes.set(node, index);
    low.set(node, index++);
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!graph.has(next)) continue;
      if (!indexes.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node)!, indexes.get(next)!));
      }
    }
    if (low.get(node) === indexes.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      if (component.length > 1 || (graph.get(node) ?? []).includes(node)) found.push(component);
    }
  };
  for (const node of graph.keys()) if (!indexes.has(node)) visit(node);
  return found;
}

describe('house rules', () => {
  it('src/ has no import cycle, type-only imports included', () => {
    const graph = new Map(sourceFiles(SRC).map((file) => [file, importsOf(file)]));
    expect(graph.size).toBeGreaterThan(20);
    const named = cycles(graph).map((c) => c.map((f) => relative(ROOT, f)).sort());
    expect(named).toEqual([]);
  });

  it('the cycle finder finds a cycle through type-only imports', () => {
    const graph = new Map([['a', ['b']], ['b', ['c']], ['c', ['a']], ['d', ['a']]]);
    expect(cycles(graph).map((c) => c.sort())).toEqual([['a', 'b', 'c']]);
  });

  it('lint refuses Fastify, Socket.IO, ioredis and the transports inside core/', async () => {
    const eslint = new ESLint({ cwd: ROOT });
    const probe = [
      "import type { FastifyInstance } from 'fastify';",
      "import type { Server } from 'socket.io';",
      "import type { Redis } from 'ioredis';",
      "import type { RunningApp } from '../../app.js';",
      "import type { AppContext } from '../../http/server.js';",
      'export type Probe = [FastifyInstance, Server, Redis, RunningApp, AppContext];',
    ].join('\n');
    const [result] = await eslint.lintText(probe, { filePath: join(SRC, 'core', 'rooms', 'probe.ts') });
    const restricted = result!.messages.filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.line);
    expect(restricted).toEqual([1, 2, 3, 5]);
    // The same imports are allowed outside core/.
    const [outside] = await eslint.lintText(probe, { filePath: join(SRC, 'http', 'probe.ts') });
    expect(outside!.messages.filter((m) => m.ruleId === 'no-restricted-imports')).toEqual([]);
  }, 60_000);
});
