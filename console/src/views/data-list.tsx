import type { ComponentChildren } from 'preact';

/** A value as a person reads it: text as it is, lists joined, anything else as indented JSON. */
export function plainValue(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean' || value === null) return String(value);
  if (Array.isArray(value) && value.every((v) => typeof v !== 'object' || v === null)) return value.map(plainValue).join(', ');
  return JSON.stringify(value, null, 2);
}

/**
 * A JSON object as a list of names and values (a task's `data`, an audit record's `detail`), each
 * value shown by `show` when given (a name instead of an id), else as plain text; `name` renames keys.
 */
export function DataList({ data, label, show, name }: {
  data: Record<string, unknown>; label?: string; show?: (key: string, value: unknown) => ComponentChildren; name?: (key: string) => string;
}) {
  const entries = Object.entries(data);
  if (entries.length === 0) return null;
  return (
    <dl class="data-list" aria-label={label}>
      {entries.map(([key, value]) => (
        <div key={key}>
          <dt>{name?.(key) ?? key}</dt>
          <dd class={typeof value === 'object' && value !== null && !Array.isArray(value) ? 'json' : undefined}>{show?.(key, value) ?? plainValue(value)}</dd>
        </div>
      ))}
    </dl>
  );
}
