import { useState } from 'preact/hooks';
import type { Room } from '@agent-messaging/client';
import { describeError, type Session } from '../session.js';

/**
 * A group room's retention and legal hold (docs/retention.md), for admins: what they are, and a form
 * to change them (`PATCH /api/v1/rooms/:id` through the client library).
 */
export function RetentionPanel({ session, room }: { session: Session; room: Room }) {
  const [current, setCurrent] = useState({ retentionDays: room.retentionDays, legalHold: room.legalHold });
  const [days, setDays] = useState(room.retentionDays === null ? '' : String(room.retentionDays));
  const [hold, setHold] = useState(room.legalHold);
  const [status, setStatus] = useState<{ error: boolean; text: string } | null>(null);
  const [saving, setSaving] = useState(false);
  if (session.me.role !== 'admin' || room.kind !== 'group') return null;

  const summary = `Retention: ${current.retentionDays === null ? 'service default' : `${current.retentionDays} days`}; legal hold ${current.legalHold ? 'on' : 'off'}`;
  const save = async (event: Event): Promise<void> => {
    event.preventDefault();
    const text = days.trim();
    if (text !== '' && !/^\d{1,5}$/.test(text)) {
      setStatus({ error: true, text: 'Retention must be a whole number of days (1 to 36500), or empty for the service default' });
      return;
    }
    setSaving(true);
    try {
      const updated = await session.client.updateRoom(room.id, { retentionDays: text === '' ? null : Number(text), legalHold: hold });
      setCurrent({ retentionDays: updated.retentionDays, legalHold: updated.legalHold });
      setStatus({ error: false, text: 'Saved' });
    } catch (err) {
      setStatus({ error: true, text: describeError(err) });
    } finally {
      setSaving(false);
    }
  };

  return (
    <details class="retention">
      <summary>{summary}</summary>
      <form onSubmit={(e) => void save(e)} aria-label="Retention">
        <label>
          Retention (days)
          <input type="number" min={1} max={36500} step={1} inputMode="numeric" value={days} placeholder="service default"
            onInput={(e) => setDays((e.target as HTMLInputElement).value)} />
        </label>
        <label>
          <input type="checkbox" checked={hold} onChange={(e) => setHold((e.target as HTMLInputElement).checked)} />
          Legal hold
        </label>
        <button type="submit" disabled={saving}>Save retention</button>
        {status !== null && <p role={status.error ? 'alert' : 'status'} class={status.error ? 'error' : undefined}>{status.text}</p>}
      </form>
    </details>
  );
}
