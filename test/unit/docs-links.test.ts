import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** README.md and every Markdown file of docs/. */
function documents(): string[] {
  const docs = readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => join('docs', f));
  return ['README.md', ...docs];
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
