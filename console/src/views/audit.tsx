import { useEffect, useState } from 'preact/hooks';
import type { AuditRecord } from '@agent-messaging/client';
import { describeError, formatTime, nameOf, type Session } from '../session.js';

/** How long typing in Event pauses before the log is asked again. */
const FILTER_PAUSE_MS = 250;

/**
 * The audit log (admins; docs/console.md): records newest first, each with its event, who acted and
 * what it was about (agents by display name, anything else by id) and when; the Event field shows
 * the records of one event (its exact name: the list suggests the names seen so far).
 */
export function AuditView({ session }: { session: Session }) {
  const [event, setEvent] = useState('');
  const [records, setRecords] = useState<AuditRecord[] | null>(null);
  const [nextCursor, setNextCursor] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [seenEvents, setSeenEvents] = useState<string[]>([]);
  const filter = event.trim().toLowerCase();

  const show = (list: AuditRecord[], cursor: string | null, append: boolean): void => {
    setRecords((before) => (append && before !== null ? [...before, ...list] : list));
    setNextCursor(cursor);
    setError(null);
    setSeenEvents((known) => [...new Set([...known, ...list.map((r) => r.event)])].sort());
  };

  // Agents created since sign-in are named too.
  const [, setNamesRead] = useState(false);
  useEffect(() => {
    session.client.directory().then(({ agents }) => {
      for (const a of agents) session.names.set(a.id, a.displayName);
      setNamesRead(true);
    }, () => undefined);
  }, [session]);

  useEffect(() => {
    let current = true;
    const timer = setTimeout(() => {
      session.client.audit(filter === '' ? {} : { event: filter }).then(
        (page) => { if (current) show(page.records, page.nextCursor, false); },
        (err) => { if (current) { setError(describeError(err)); setRecords([]); setNextCursor(null); } },
      );
    }, filter === '' ? 0 : FILTER_PAUSE_MS);
    return () => { current = false; clearTimeout(timer); };
  }, [session, filter]);

  const loadOlder = (): void => {
    if (nextCursor === null) return;
    session.client.audit({ ...(filter === '' ? {} : { event: filter }), before: nextCursor }).then(
      (page) => show(page.records, page.nextCursor, true),
      (err) => setError(describeError(err)),
    );
  };
  const who = (id: string | null): string => (id === null ? '-' : nameOf(session, id));

  return (
    <div class="audit">
      <h1>Audit</h1>
      <div class="field">
        <label for="audit-event">Event</label>
        <input id="audit-event" type="search" list="audit-events" value={event} placeholder="e.g. room-created" autocomplete="off"
          onInput={(e) => setEvent((e.target as HTMLInputElement).value)} />
        <datalist id="audit-events">{seenEvents.map((name) => <option key={name} value={name} />)}</datalist>
      </div>
      {error !== null && <p role="alert" class="error">{error}</p>}
      {records === null ? <p>Loading…</p> : (
        <div class="table-wrap">
          <table>
            <caption>{records.length === 0 ? 'No records' : `${records.length === 1 ? '1 record' : `${records.length} records`}, newest first`}</caption>
            <thead><tr><th scope="col">Time</th><th scope="col">Event</th><th scope="col">Actor</th><th scope="col">Subject</th><th scope="col">Detail</th></tr></thead>
            <tbody>
              {records.map((r) => (
                <tr key={r.id}>
                  <th scope="row"><time dateTime={r.createdAt} title={r.createdAt}>{formatTime(r.createdAt)}</time></th>
                  <td>{r.event}</td>
                  <td title={r.actorId ?? undefined}>{who(r.actorId)}</td>
                  <td title={r.subjectId ?? undefined}>{who(r.subjectId)}</td>
                  <td><code>{JSON.stringify(r.detail)}</code></td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {nextCursor !== null && <button type="button" class="secondary" onClick={loadOlder}>Load older records</button>}
    </div>
  );
}
