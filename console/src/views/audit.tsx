import { useEffect, useState } from 'preact/hooks';
import type { AuditRecord } from '@agent-messaging/client';
import { limiter } from '../limited.js';
import { describeError, formatTime, nameOf, roomTitle, type Session } from '../session.js';
import { DataList, plainValue } from './data-list.js';

/** How long typing in Event pauses before the log is asked again. */
const FILTER_PAUSE_MS = 250;
/** Session exchanges: one per sign-in and renewal, they outnumber the rest; hidden unless asked for. */
const SESSION_EVENT = 'jwt-issued';
/** A page as the service gives it; while sessions are hidden, up to this many pages are read to fill one. */
const PAGE = 100;
const PAGES_PER_READ = 5;

/** What an audit record's `subjectId` names, by its event (docs/protocol.md, Audit log). */
type SubjectKind = 'agent' | 'token' | 'room' | 'message' | 'channel' | 'post' | 'file' | 'task' | 'webhook';
function subjectKind(event: string): SubjectKind | null {
  if (event.startsWith('agent-') || event === SESSION_EVENT) return 'agent';
  if (event.startsWith('token-')) return 'token';
  if (event === 'room-created' || event.startsWith('member-')) return 'room';
  if (event.startsWith('message-')) return 'message';
  if (event.startsWith('channel-')) return 'channel';
  if (event.startsWith('post-') || event.startsWith('reply-') || event.startsWith('reaction-')) return 'post';
  if (event.startsWith('file-')) return 'file';
  if (event.startsWith('task-')) return 'task';
  if (event.startsWith('webhook-')) return 'webhook';
  return null;
}

/** Names the view knows for ids: agents (the session's), rooms, channels, and tasks read as they show up. */
interface Names { rooms: Map<string, string>; channels: Map<string, string>; tasks: Map<string, string> }

const shortId = (id: string): string => `${id.slice(0, 8)}…`;
/** A detail's key as its value is shown: `roomId` holds a room's name, so it reads "room". */
const RESOLVED_KEYS = new Set(['agentId', 'assigneeId', 'roomId', 'channelId']);
const detailName = (key: string): string => (RESOLVED_KEYS.has(key) ? key.slice(0, -2) : key === 'exp' ? 'expires' : key);
const taskReads = limiter(4);

/**
 * The audit log (admins; docs/console.md): records newest first, each with its event, who acted and
 * what it was about, by name where the console can tell (agents, rooms, channels, tasks, tokens by
 * prefix) and when, and its detail as names and values. `jwt-issued` records (a session each) are
 * hidden unless *Show session records* is checked or the Event field asks for them.
 */
export function AuditView({ session }: { session: Session }) {
  const [event, setEvent] = useState('');
  const [showSessions, setShowSessions] = useState(false);
  const [records, setRecords] = useState<AuditRecord[] | null>(null);
  const [nextCursor, setNextCursor] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [seenEvents, setSeenEvents] = useState<string[]>([]);
  const [names, setNames] = useState<Names>({ rooms: new Map(), channels: new Map(), tasks: new Map() });
  const filter = event.trim().toLowerCase();
  const hideSessions = !showSessions && filter !== SESSION_EVENT;

  // Agents created since sign-in are named too; rooms and channels by their names.
  useEffect(() => {
    const { client } = session;
    client.directory().then(({ agents }) => {
      for (const a of agents) session.names.set(a.id, a.displayName);
      setNames((n) => ({ ...n }));
    }, () => undefined);
    client.rooms().then((rooms) => setNames((n) => ({ ...n, rooms: new Map(rooms.map((r) => [r.id, roomTitle(session, r)])) })), () => undefined);
    client.channels().then((channels) => setNames((n) => ({ ...n, channels: new Map(channels.map((c) => [c.id, c.name])) })), () => undefined);
  }, [session]);

  /** Pages from `before` until some records are left to show (sessions hidden), or the end. */
  const read = async (before: string | null): Promise<{ records: AuditRecord[]; nextCursor: string | null }> => {
    const found: AuditRecord[] = [];
    let cursor = before;
    for (let page = 0; page < (hideSessions ? PAGES_PER_READ : 1); page++) {
      const got = await session.client.audit({ ...(filter === '' ? {} : { event: filter }), ...(cursor === null ? {} : { before: cursor }), limit: PAGE });
      found.push(...got.records);
      cursor = got.hasMore ? got.nextCursor : null;
      if (cursor === null || found.some((r) => r.event !== SESSION_EVENT)) break;
    }
    return { records: found, nextCursor: cursor };
  };

  const show = (list: AuditRecord[], cursor: string | null, append: boolean): void => {
    setRecords((earlier) => (append && earlier !== null ? [...earlier, ...list] : list));
    setNextCursor(cursor);
    setError(null);
    setSeenEvents((known) => [...new Set([...known, ...list.map((r) => r.event)])].sort());
  };

  useEffect(() => {
    let current = true;
    const timer = setTimeout(() => {
      read(null).then(
        (page) => { if (current) show(page.records, page.nextCursor, false); },
        (err) => { if (current) { setError(describeError(err)); setRecords([]); setNextCursor(null); } },
      );
    }, filter === '' ? 0 : FILTER_PAUSE_MS);
    return () => { current = false; clearTimeout(timer); };
    // `read` closes over the filter and the sessions choice, both listed.
  }, [session, filter, hideSessions]);

  const shown = records?.filter((r) => !hideSessions || r.event !== SESSION_EVENT) ?? null;

  // Tasks are named by their titles, read once each (an admin may read any task).
  useEffect(() => {
    const unknown = [...new Set((shown ?? []).filter((r) => subjectKind(r.event) === 'task' && r.subjectId !== null).map((r) => r.subjectId!))]
      .filter((id) => !names.tasks.has(id));
    for (const id of unknown) {
      names.tasks.set(id, ''); // asked once
      taskReads(() => session.client.task(id)).then(
        (task) => setNames((n) => ({ ...n, tasks: new Map(n.tasks).set(id, task.title) })),
        () => undefined,
      );
    }
  }, [shown, names, session]);

  const loadOlder = (): void => {
    if (nextCursor === null) return;
    read(nextCursor).then((page) => show(page.records, page.nextCursor, true), (err) => setError(describeError(err)));
  };

  const agent = (id: string): string => nameOf(session, id);
  const room = (id: string): string => names.rooms.get(id) ?? `room ${shortId(id)}`;
  /** What a record is about, in words. */
  const subject = (r: AuditRecord): string => {
    if (r.subjectId === null) return '-';
    const id = r.subjectId;
    const d = r.detail;
    switch (subjectKind(r.event)) {
      case 'agent': return agent(id);
      case 'token': return `token ${typeof d.prefix === 'string' ? d.prefix : shortId(id)}${typeof d.agentId === 'string' ? ` of ${agent(d.agentId)}` : ''}`;
      case 'room': return names.rooms.get(id) ?? (typeof d.slug === 'string' ? d.slug : `room ${shortId(id)}`);
      case 'message': return `message ${shortId(id)}${typeof d.roomId === 'string' ? ` in ${room(d.roomId)}` : ''}`;
      case 'channel': return names.channels.get(id) ?? (typeof d.slug === 'string' ? d.slug : `channel ${shortId(id)}`);
      case 'post': return `post ${shortId(id)}${typeof d.channelId === 'string' ? ` in ${names.channels.get(d.channelId) ?? shortId(d.channelId)}` : ''}`;
      case 'file': return `file ${shortId(id)}`;
      case 'task': return names.tasks.get(id) || `task ${shortId(id)}`;
      case 'webhook': return `webhook ${shortId(id)}${typeof d.agentId === 'string' ? ` of ${agent(d.agentId)}` : ''}`;
      default: return id;
    }
  };
  /** A detail's value in words: agents, rooms and channels by name, an expiry as a time. */
  const detailValue = (key: string, value: unknown): string | null => {
    if (typeof value === 'string' && (key === 'agentId' || key === 'assigneeId')) return agent(value);
    if (typeof value === 'string' && key === 'roomId') return room(value);
    if (typeof value === 'string' && key === 'channelId') return names.channels.get(value) ?? value;
    if (typeof value === 'number' && key === 'exp') return formatTime(new Date(value * 1000).toISOString());
    return null;
  };

  return (
    <div class="audit">
      <h1>Audit</h1>
      <div class="audit-filters">
        <div class="field">
          <label for="audit-event">Event</label>
          <input id="audit-event" type="search" list="audit-events" value={event} placeholder="e.g. room-created" autocomplete="off"
            onInput={(e) => setEvent((e.target as HTMLInputElement).value)} />
          <datalist id="audit-events">{seenEvents.map((name) => <option key={name} value={name} />)}</datalist>
        </div>
        <div class="check">
          <input id="audit-sessions" type="checkbox" checked={showSessions} onChange={(e) => setShowSessions((e.target as HTMLInputElement).checked)} />
          <label for="audit-sessions">Show session records ({SESSION_EVENT})</label>
        </div>
      </div>
      {error !== null && <p role="alert" class="error">{error}</p>}
      {shown === null ? <p>Loading…</p> : (
        <div class="table-wrap">
          <table class="audit-table">
            <caption>
              {shown.length === 0 ? 'No records' : `${shown.length === 1 ? '1 record' : `${shown.length} records`}, newest first`}
              {hideSessions && records!.length > shown.length ? ` (${records!.length - shown.length} session records hidden)` : ''}
            </caption>
            <thead><tr><th scope="col">Time</th><th scope="col">Event</th><th scope="col">Actor</th><th scope="col">Subject</th><th scope="col">Detail</th></tr></thead>
            <tbody>
              {shown.map((r) => (
                <tr key={r.id}>
                  <th scope="row" data-label="Time"><time dateTime={r.createdAt} title={r.createdAt}>{formatTime(r.createdAt)}</time></th>
                  <td data-label="Event">{r.event}</td>
                  <td data-label="Actor" title={r.actorId ?? undefined}>{r.actorId === null ? 'anonymous' : agent(r.actorId)}</td>
                  <td data-label="Subject" title={r.subjectId ?? undefined}>{subject(r)}</td>
                  <td data-label="Detail">
                    {Object.keys(r.detail).length === 0 ? '-' : <DataList data={r.detail} show={(key, value) => detailValue(key, value) ?? plainValue(value)} name={detailName} />}
                  </td>
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
