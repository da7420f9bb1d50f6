import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/build.js';

/**
 * The rules of the house that hold the architecture together (docs/architecture.md): core/ stays
 * transport-free (an ESLint rule), no module imports itself back through others, type-only
 * imports included (a cycle makes load order matter and the layers meaningless), and every import
 * between folders is one the page's "may import" table allows (the test reads that table, so the
 * page and the check cannot disagree).
 */

const SRC = join(ROOT, 'src');
const ARCHITECTURE = join(ROOT, 'docs', 'architecture.md');

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

/** The folder of a source file: `src/<name>/...` or the top-level file `src/<name>.ts`. */
function unitOf(file: string): string {
  const [first, ...rest] = relative(SRC, file).split('/');
  return rest.length === 0 ? first!.replace(/\.ts$/, '') : first!;
}

/**
 * The "may import" table of docs/architecture.md, as folder -> what it may import: a folder name
 * (`core`, `core/`) allows the whole folder, a path (`store/driver-errors.ts`) that one file. A row
 * belongs to the folder its first cell names first (`src/http/`, `src/errors.ts`); rows of one
 * folder add up; backticked words that name no folder (packages, prose) are not allowances.
 */
function importTable(markdown: string, units: ReadonlySet<string>): Map<string, Set<string>> {
  const section = markdown.split(/^## /m).find((s) => s.startsWith('Folders and what each may import'));
  if (section === undefined) throw new Error('docs/architecture.md has no "Folders and what each may import" section');
  const table = new Map<string, Set<string>>();
  for (const line of section.split('\n')) {
    const cells = line.split('|').slice(1, -1).map((c) => c.trim());
    if (cells.length < 3) continue;
    const owners = [...cells[0]!.matchAll(/`src\/([^`/]+?)(?:\.ts)?(?:\/[^`]*)?`/g)].map((m) => m[1]!).filter((u) => units.has(u));
    if (owners.length === 0) continue;
    const allowances: string[] = [];
    for (const [, raw] of cells[cells.length - 1]!.matchAll(/`([^`]+)`/g)) {
      const name = raw!.replace(/^src\//, '');
      const unit = name.split('/')[0]!.replace(/\.ts$/, '');
      if (units.has(unit)) allowances.push(name.endsWith('/') || !name.includes('/') ? unit : name);
    }
    for (const owner of new Set(owners)) table.set(owner, new Set([...(table.get(owner) ?? []), ...allowances]));
  }
  return table;
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

/**
 * The graph between core's features (`src/core/<feature>/`), type-only imports included. Core's
 * top-level files (`events.ts`, `principal.ts`, `paging.ts`, `validation.ts`, `search-text.ts`) are
 * the shared kernel every feature may use and belong to none: edges through them are left out.
 */
function featureGraph(imports: Map<string, string[]>): Map<string, string[]> {
  const core = join(SRC, 'core');
  const featureOf = (file: string): string | null => {
    const parts = relative(core, file).split('/');
    return parts.length > 1 && parts[0] !== '..' ? parts[0]! : null;
  };
  const graph = new Map<string, Set<string>>();
  for (const [file, targets] of imports) {
    const from = featureOf(file);
    if (from === null) continue;
    const edges = graph.get(from) ?? new Set<string>();
    graph.set(from, edges);
    for (const target of targets) {
      const to = featureOf(target);
      if (to !== null && to !== from) edges.add(to);
    }
  }
  return new Map([...graph].map(([feature, edges]) => [feature, [...edges]]));
}

describe('house rules', () => {
  it('src/ has no import cycle, type-only imports included', () => {
    const graph = new Map(sourceFiles(SRC).map((file) => [file, importsOf(file)]));
    expect(graph.size).toBeGreaterThan(20);
    const named = cycles(graph).map((c) => c.map((f) => relative(ROOT, f)).sort());
    expect(named).toEqual([]);
  });

  it('core\'s features import each other one way: no cycle between two of src/core/<feature>/, type-only imports included', () => {
    const graph = featureGraph(new Map(sourceFiles(join(SRC, 'core')).map((file) => [file, importsOf(file)])));
    expect(graph.size).toBeGreaterThan(10);
    expect(cycles(graph).map((c) => c.sort())).toEqual([]);
  });

  it('the feature graph groups files by feature and finds a cycle between two features', () => {
    const at = (path: string): string => join(SRC, 'core', path);
    const graph = featureGraph(new Map([
      [at('messages/messages.service.ts'), [at('rooms/rooms.store.ts'), at('events.ts'), at('messages/message.ts')]],
      [at('rooms/read-cursors.service.ts'), [at('messages/seq.store.ts')]],
      [at('events.ts'), [at('messages/message.ts')]],
      [at('tasks/task.ts'), [at('messages/message.ts')]],
    ]));
    expect(graph).toEqual(new Map([['messages', ['rooms']], ['rooms', ['messages']], ['tasks', ['messages']]]));
    expect(cycles(graph).map((c) => c.sort())).toEqual([['messages', 'rooms']]);
  });

  it('every import between folders is one docs/architecture.md\'s table allows, and the table itself has no cycle', () => {
    const files = sourceFiles(SRC);
    const units = new Set(files.map(unitOf));
    const table = importTable(readFileSync(ARCHITECTURE, 'utf8'), units);
    expect([...units].filter((u) => !table.has(u)).sort()).toEqual([]); // every folder has its row
    const refused: string[] = [];
    for (const file of files) {
      const from = unitOf(file);
      for (const target of importsOf(file)) {
        const to = unitOf(target);
        if (to === from) continue;
        const allowed = table.get(from)!;
        if (!allowed.has(to) && !allowed.has(relative(SRC, target))) refused.push(`${relative(ROOT, file)} -> ${relative(ROOT, target)}`);
      }
    }
    expect(refused).toEqual([]);
    const byFolder = new Map([...table].map(([unit, allowed]) => [unit, [...allowed].map((a) => a.split('/')[0]!.replace(/\.ts$/, '')).filter((a) => a !== unit)]));
    expect(cycles(byFolder)).toEqual([]);
  });

  it('reads the table as the page writes it', () => {
    const units = new Set(['http', 'core', 'errors', 'store', 'mcp']);
    const page = [
      '## Folders and what each may import',
      '| folder | its job | may import |',
      '|---|---|---|',
      '| `src/http/` | Fastify (`server.ts`) | `core/`, `errors`, `mcp` (the tools), `fastify` |',
      '| `src/errors.ts`, `src/mcp/` | two at once | `store/driver-errors.ts` only |',
      '| `src/core/<feature>/` | the domain | `errors` |',
      '| `src/core/events.ts` | the port | `store/` types |',
      '| `realtime/connection/` | one connection | |',
      '## Next section',
      '| `src/mcp/` | not in the section | `http` |',
    ].join('\n');
    expect(importTable(page, units)).toEqual(new Map([
      ['http', new Set(['core', 'errors', 'mcp'])],
      ['errors', new Set(['store/driver-errors.ts'])],
      ['mcp', new Set(['store/driver-errors.ts'])],
      ['core', new Set(['errors', 'store'])],
    ]));
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
