import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** The files under `dir` (relative to the repository), folders followed, node_modules and dist left out. */
function filesUnder(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return ['node_modules', 'dist', 'results'].includes(entry.name) ? [] : filesUnder(path);
    return [path];
  });
}

/** README.md and every Markdown file of docs/, in subfolders too. */
function documents(): string[] {
  return ['README.md', ...filesUnder('docs').filter((f) => f.endsWith('.md'))];
}

/** The text outside fenced code blocks, where a `[x](y)` is a link. */
function prose(markdown: string): string {
  return markdown.replace(/^```[^\n]*\n[\s\S]*?^```[ \t]*$/gm, '');
}

/** Inline links `[text](target)` (titles dropped); images too. */
function links(markdown: string): string[] {
  return [...prose(markdown).matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((m) => m[1]!);
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

function anchors(markdown: string): Set<string> {
  return new Set([...prose(markdown).matchAll(/^#{1,6}\s+(.+)$/gm)].map((m) => slug(m[1]!)));
}

describe('links in README.md and docs/*.md', () => {
  it('point to files of this repository (and their headings), never outside it', () => {
    const broken: string[] = [];
    for (const doc of documents()) {
      const text = readFileSync(join(ROOT, doc), 'utf8');
      for (const target of links(text)) {
        if (/^(https?:|mailto:)/.test(target)) continue;
        const [path = '', anchor] = target.split('#', 2);
        const file = path === '' ? join(ROOT, doc) : resolve(ROOT, dirname(doc), decodeURIComponent(path));
        const inside = relative(ROOT, file);
        if (inside.startsWith('..') || inside.startsWith(sep) || resolve(ROOT, inside) !== file) {
          broken.push(`${doc}: ${target} leaves the repository`);
        } else if (!existsSync(file)) {
          broken.push(`${doc}: ${target} does not exist`);
        } else if (anchor !== undefined && anchor !== '' && file.endsWith('.md') && statSync(file).isFile() && !anchors(readFileSync(file, 'utf8')).has(anchor)) {
          broken.push(`${doc}: ${target} names no heading of ${inside}`);
        }
      }
    }
    expect(broken).toEqual([]);
  });

  it('finds the links it checks (the parser is not blind)', () => {
    const readme = links(readFileSync(join(ROOT, 'README.md'), 'utf8'));
    expect(readme).toContain('docs/reliability.md');
    expect(readme.length).toBeGreaterThan(10);
    expect(slug('Strict mode (`AUTHZ_MODE=strict`)')).toBe('strict-mode-authz_modestrict');
    expect(slug('Scale-out: many nodes on PostgreSQL and Redis')).toBe('scale-out-many-nodes-on-postgresql-and-redis');
  });
});

describe('the index of docs/ and the counts the README gives', () => {
  it('docs/README.md links every page under docs/ (a page nobody can find from the index is lost)', () => {
    const index = links(readFileSync(join(ROOT, 'docs', 'README.md'), 'utf8'))
      .filter((target) => !/^(https?:|mailto:)/.test(target))
      .map((target) => relative(ROOT, resolve(ROOT, 'docs', decodeURIComponent(target.split('#')[0]!))));
    const pages = filesUnder('docs').filter((f) => f.endsWith('.md') && f !== join('docs', 'README.md'));
    expect(pages.length).toBeGreaterThan(10);
    expect(pages.filter((page) => !index.includes(page))).toEqual([]);
  });

  it('the README names every MCP tool and counts them right, in digits (a count spelled out cannot be checked)', async () => {
    const { TOOL_LIST } = await import('../../src/mcp/tools/index.js');
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const counts = [...readme.matchAll(/\b([A-Za-z]+|\d+) (?:MCP )?tools\b/g)].map((m) => m[1]!);
    const spelled = /^(one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|[a-z]+teen|twenty|thirty|forty|fifty)$/i;
    expect(counts.filter((count) => spelled.test(count))).toEqual([]);
    const numbers = counts.filter((count) => /^\d+$/.test(count)).map(Number);
    expect(numbers.length).toBeGreaterThan(0);
    expect(numbers.filter((n) => n !== TOOL_LIST.length)).toEqual([]);
    expect(TOOL_LIST.map((tool) => tool.name).filter((name) => !readme.includes(`\`${name}\``))).toEqual([]);
  });
});

/**
 * What a clone of the repository does not hold: the contracts the project was built from, a folder
 * beside it, and an issue tracker. Comments and docs cite docs/*.md instead, or say the reason.
 */
const OUTSIDE_CITATION = /PHASE[0-9]|DESIGN\.md|SPEC\.md|\.\.\/shared\b|\b[Ii]ssues? #?[0-9]+/;

describe('the repository explains itself', () => {
  it('cites no document outside it and no issue number, in docs or in source comments', () => {
    const self = relative(ROOT, fileURLToPath(import.meta.url));
    const files = [
      ...documents(),
      ...['src', 'test', 'console/src', 'bench', 'scripts', 'packages/protocol/src', 'packages/client/src'].flatMap((dir) => filesUnder(dir)),
      'console/vite.config.ts',
    ].filter((f) => f !== self && /\.(md|ts|tsx|js|mjs)$/.test(f));
    const found = files.flatMap((file) =>
      readFileSync(join(ROOT, file), 'utf8')
        .split('\n')
        .flatMap((line, i) => (OUTSIDE_CITATION.test(line) ? [`${file}:${i + 1}: ${line.trim()}`] : [])),
    );
    expect(found).toEqual([]);
    // The pattern is not blind: each kind of citation it must catch, and what it must let through
    // (the samples are assembled, so that this file is not itself a citation for a repository grep).
    const samples = [['(PHASE', '2.md 1.2)'], ['DESIGN', '.md section 3'], ['SPEC', '.md "Room"'], ['see ../shared', '/STYLE.md'], ['issue', ' 15'], ['Issue', ' #7']];
    for (const cited of samples.map((parts) => parts.join(''))) {
      expect(OUTSIDE_CITATION.test(cited), cited).toBe(true);
    }
    expect(OUTSIDE_CITATION.test('docs/protocol.md, Scoped tokens; issued tokens')).toBe(false);
  });

  it('keeps the README short enough to read: the reference is docs/protocol.md', () => {
    const lines = readFileSync(join(ROOT, 'README.md'), 'utf8').split('\n').length;
    expect(lines).toBeLessThanOrEqual(600);
    expect(links(readFileSync(join(ROOT, 'README.md'), 'utf8'))).toContain('docs/protocol.md');
  });
});
