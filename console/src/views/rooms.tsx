import { useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks';
import type { ActivityUpdate, Message, Room, RoomMember } from '@agent-messaging/client';
import { describeError, formatTime, learnNames, nameOf, peerName, roomTitle, type Session } from '../session.js';
import { useTextForm } from '../text-form.js';
import { Attachments } from './attachments.js';
import { AckControls, ImportanceMark, useAwaitingAcks } from './acks.js';
import { Composer, roomComposer, threadComposer } from './composer.js';
import { RetentionPanel } from './retention.js';
import { QueueTasks, RoomLeases } from './room-work.js';

const PAGE = 50;

/** How long live counts wait before the list is read again, so that a burst costs one request. */
const RECOUNT_DELAY_MS = 300;

/**
 * The agent's rooms (direct ones named by the other agent) with their unread counts and, beside
 * them, how many of those are for its attention; the open room beside them.
 */
export function RoomsView({ session, roomId, threadId }: { session: Session; roomId?: string; threadId?: string }) {
  const [rooms, setRooms] = useState<Room[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const { client } = session;
  const openId = useRef(roomId);
  openId.current = roomId;

  const load = useCallback(() => {
    // Only the rooms the agent is a member of (those with its read cursor): in open mode the service
    // lists every room, whose history is readable but where sending is refused.
    client.rooms().then(async (list) => {
      const mine = list.filter((r) => r.readSeq !== undefined);
      // A direct room with an agent made after sign-in: its display name is in a fresh directory.
      if (mine.some((r) => r.kind === 'direct' && !session.displayNames.has(peerName(session, r)))) {
        await client.directory().then(({ agents }) => learnNames(session, agents), () => undefined);
      }
      // The open room's counts are the pane's (it marks what it shows read); the others the service's.
      setRooms((current) => mine.map((r) => {
        const shown = r.id === openId.current ? current?.find((c) => c.id === r.id) : undefined;
        return shown ? { ...r, unreadCount: shown.unreadCount, attentionCount: shown.attentionCount } : r;
      }));
      setError(null);
    }, (err) => setError(describeError(err)));
  }, [client, session]);
  useEffect(load, [load]);
  // After a reconnect the counts are read again: messages may have come while away.
  useEffect(() => client.on('connect', load), [client, load]);
  useEffect(() => {
    let recount: ReturnType<typeof setTimeout> | undefined;
    const offMessage = client.on('message', (message) => {
      if (message.senderId === session.me.id || message.roomId === roomId) return;
      // Mentions and direct rooms are counted here at once; whether a reply answers this agent is the
      // service's to say (the message replied to may not be loaded), so the list is read again.
      setRooms((list) => list?.map((r) => {
        if (r.id !== message.roomId) return r;
        const attention = r.kind === 'direct' || (message.mentions ?? []).includes(session.me.id);
        return { ...r, unreadCount: (r.unreadCount ?? 0) + 1, attentionCount: (r.attentionCount ?? 0) + (attention ? 1 : 0), lastSeq: message.seq };
      }) ?? list);
      if (message.threadId !== null) {
        clearTimeout(recount);
        recount = setTimeout(load, RECOUNT_DELAY_MS);
      }
    });
    // A room the agent joined while here (a direct room opened by the other side): listed at once.
    const offAdded = client.on('roomAdded', ({ room }) => {
      setRooms((list) => (list === null || list.some((r) => r.id === room.id) ? list : [...list, { ...room, readSeq: room.readSeq ?? 0, unreadCount: room.unreadCount ?? 0, attentionCount: room.attentionCount ?? 0 }]));
      load();
    });
    const offRemoved = client.on('roomRemoved', ({ roomId: gone }) => setRooms((list) => list?.filter((r) => r.id !== gone) ?? list));
    return () => { clearTimeout(recount); offMessage(); offAdded(); offRemoved(); };
  }, [client, roomId, session, load]);

  const markedRead = useCallback((id: string, unreadCount: number) => {
    // Attention is a part of unread: when nothing is unread, nothing is for attention either.
    setRooms((list) => list?.map((r) => (r.id === id ? { ...r, unreadCount, attentionCount: Math.min(r.attentionCount ?? 0, unreadCount) } : r)) ?? list);
  }, []);
  const open = rooms?.find((r) => r.id === roomId);

  return (
    <div class="rooms">
      <section class="room-list" aria-labelledby="rooms-heading">
        <h1 id="rooms-heading">Rooms</h1>
        {error !== null && <p role="alert" class="error">{error}</p>}
        {rooms === null ? <p>Loading…</p> : rooms.length === 0 ? <p>This agent is in no room yet.</p> : (
          <ul>
            {rooms.map((room) => (
              <li key={room.id} class={room.kind === 'direct' ? 'direct' : undefined}>
                <a href={`#/rooms/${room.id}`} aria-current={room.id === roomId ? 'page' : undefined}>
                  <span class="room-name">{roomTitle(session, room)}</span>{' '}
                  <span class={room.unreadCount ? 'badge' : 'badge zero'}>{room.unreadCount ?? 0}</span>
                </a>
                {(room.attentionCount ?? 0) > 0 && (
                  <span class="badge attention" title="Unread messages for this agent's attention: mentions, direct messages, replies to it">
                    {room.attentionCount} for you
                  </span>
                )}
              </li>
            ))}
          </ul>
        )}
      </section>
      {open && <RoomPane key={open.id} session={session} room={open} threadId={threadId} onRead={markedRead} />}
      {roomId !== undefined && rooms !== null && !open && <p role="alert" class="error">This room does not exist or this agent is not a member.</p>}
    </div>
  );
}

function RoomPane({ session, room, threadId, onRead }: { session: Session; room: Room; threadId?: string; onRead: (roomId: string, unread: number) => void }) {
  const { client } = session;
  const [messages, setMessages] = useState<Message[]>([]);
  const [older, setOlder] = useState<{ cursor: string | null; hasMore: boolean; loading: boolean }>({ cursor: null, hasMore: false, loading: true });
  const [error, setError] = useState<string | null>(null);
  const log = useRef<HTMLDivElement>(null);
  const keepBottom = useRef(true);
  const keepFromBottom = useRef<number | null>(null);
  const readSeq = useRef(room.readSeq ?? 0);

  // The open thread; `request` counts the times it was asked for, each of which brings it into view
  // with focus in its box (on a phone it is below the conversation).
  const [thread, setThread] = useState<{ rootId: string; request: number } | null>(threadId === undefined ? null : { rootId: threadId, request: 1 });
  const opener = useRef<HTMLElement | null>(null);
  const openThread = useCallback((rootId: string) => {
    opener.current = document.activeElement instanceof HTMLElement ? document.activeElement : null;
    setThread((t) => ({ rootId, request: (t?.request ?? 0) + 1 }));
  }, []);
  useEffect(() => { if (threadId !== undefined) openThread(threadId); }, [threadId, openThread]);
  const closeThread = useCallback(() => {
    setThread(null);
    if (location.hash.includes('/thread/')) location.hash = `#/rooms/${room.id}`;
    // Back to where the person was (the Reply they pressed), when it is still there.
    if (opener.current?.isConnected) opener.current.focus();
  }, [room.id]);
  const members = useMembers(session, room.id);
  const title = roomTitle(session, room);
  /** `live`: new messages, whose replies count on their roots (pages of history are counted already). */
  const add = useCallback((incoming: Message[], live = false) => {
    setMessages((current) => {
      const byId = new Map(current.map((m) => [m.id, m]));
      for (const m of incoming) {
        const root = live && m.threadId !== null && !byId.has(m.id) ? byId.get(m.threadId) : undefined;
        if (root) byId.set(root.id, { ...root, replyCount: (root.replyCount ?? 0) + 1, lastReplyAt: m.createdAt });
        byId.set(m.id, m);
      }
      return [...byId.values()].sort((a, b) => a.seq - b.seq);
    });
  }, []);
  const byId = useMemo(() => new Map(messages.map((m) => [m.id, m])), [messages]);
  /** What a reply answers, when loaded: the message it replies to, else its thread's root. */
  const repliedTo = (m: Message): Message | undefined => (m.threadId === null ? undefined : byId.get(m.replyTo ?? m.threadId) ?? byId.get(m.threadId));
  const change = useCallback((id: string, fields: Partial<Message>) => {
    setMessages((current) => current.map((m) => (m.id === id ? { ...m, ...fields } : m)));
  }, []);
  const { awaiting, acked } = useAwaitingAcks(session, room.id, messages);
  const onAcked = useCallback((id: string, ack: Message['ack']) => { acked(id); change(id, { ack }); }, [acked, change]);

  useEffect(() => {
    const offUpdated = client.on('messageUpdated', (u) => {
      if (u.roomId !== room.id) return;
      // A streamed message's end says how it ended (docs/streaming.md); an edit only changes the text.
      const ended = u.streamEnd === undefined ? {} : { streaming: u.streaming ?? false, streamEnd: u.streamEnd, data: u.data };
      change(u.id, { body: u.body, editedAt: u.editedAt, ...ended });
    });
    const offDeleted = client.on('messageDeleted', (d) => { if (d.roomId === room.id) change(d.id, { body: '', mentions: [], deletedAt: d.deletedAt, streaming: false }); });
    // A growing message is shown in place: the client keeps its text as the deltas come.
    const offDelta = client.on('messageDelta', (delta) => {
      if (delta.roomId === room.id && !delta.gap) change(delta.messageId, { body: delta.current });
    });
    // Someone acknowledged one of the agent's messages: its count goes up (docs/acknowledgements.md).
    const offAcked = client.on('messageAcked', (a) => {
      if (a.roomId === room.id) setMessages((current) => current.map((m) => (m.id === a.messageId && m.ack !== null ? { ...m, ack: { ...m.ack, acked: Math.min(m.ack.required, m.ack.acked + 1) } } : m)));
    });
    return () => { offUpdated(); offDeleted(); offDelta(); offAcked(); };
  }, [client, room.id, change]);

  useEffect(() => {
    let live = true;
    // Live messages are taken from the start; the first page is merged with them by id.
    const off = client.on('message', (message) => { if (message.roomId === room.id) add([message], true); });
    client.history(room.id, { limit: PAGE }).then((page) => {
      if (!live) return;
      add(page.messages);
      setOlder({ cursor: page.nextCursor, hasMore: page.hasMore, loading: false });
    }, (err) => live && setError(describeError(err)));
    return () => { live = false; off(); };
  }, [client, room.id, add]);

  // What is shown is read: the cursor moves to the newest message on screen.
  useEffect(() => {
    const newest = messages[messages.length - 1]?.seq ?? 0;
    if (newest <= readSeq.current) return;
    readSeq.current = newest;
    client.markRead(room.id, newest).then((cursor) => onRead(room.id, cursor.unreadCount), () => undefined);
  }, [client, room.id, messages, onRead]);

  // New messages keep the view at the bottom when it was there; older pages keep what was in view.
  useLayoutEffect(() => {
    const el = log.current;
    if (!el) return;
    if (keepFromBottom.current !== null) {
      el.scrollTop = el.scrollHeight - keepFromBottom.current;
      keepFromBottom.current = null;
    } else if (keepBottom.current) {
      el.scrollTop = el.scrollHeight;
    }
  }, [messages]);

  const loadOlder = useCallback(() => {
    if (older.loading || !older.hasMore || older.cursor === null) return;
    setOlder({ ...older, loading: true });
    client.history(room.id, { before: older.cursor, limit: PAGE }).then((page) => {
      const el = log.current;
      if (el) keepFromBottom.current = el.scrollHeight - el.scrollTop;
      add(page.messages);
      setOlder({ cursor: page.nextCursor, hasMore: page.hasMore, loading: false });
    }, (err) => { setError(describeError(err)); setOlder({ ...older, loading: false }); });
  }, [client, room.id, older, add]);

  const onScroll = (): void => {
    const el = log.current;
    if (!el) return;
    keepBottom.current = el.scrollHeight - el.scrollTop - el.clientHeight < 40;
    if (el.scrollTop < 80) loadOlder();
  };

  return (
    <section class="room" aria-labelledby="room-heading">
      <h2 id="room-heading">{title}</h2>
      <RetentionPanel key={room.id} session={session} room={room} />
      {error !== null && <p role="alert" class="error">{error}</p>}
      <div class="room-body">
        <div class="conversation">
          {older.hasMore && (
            <button type="button" class="secondary older" onClick={loadOlder} disabled={older.loading}>
              {older.loading ? 'Loading older messages…' : 'Load older messages'}
            </button>
          )}
          <div class="messages" ref={log} onScroll={onScroll} role="log" aria-label={`Messages in ${title}`} tabIndex={0}>
            <ol>
            {messages.map((m) => (
              <MessageItem key={m.id} session={session} message={m} repliedTo={repliedTo(m)} onChange={change} onThread={openThread}
                awaitingMe={awaiting.has(m.id)} onAcked={onAcked} />
            ))}
            </ol>
          </div>
          <Activity session={session} roomId={room.id} members={members} />
          <Composer session={session} roomId={room.id} members={members ?? []} kind={roomComposer(session, room.id)} onSent={(m) => { keepBottom.current = true; add([m], true); }} />
        </div>
        {thread !== null && <ThreadPanel key={thread.rootId} session={session} roomId={room.id} rootId={thread.rootId} request={thread.request} members={members ?? []} onClose={closeThread} />}
        <div class="room-side">
          <Online members={members} />
          {room.kind !== 'direct' && <QueueTasks key={room.id} session={session} roomId={room.id} />}
          <RoomLeases key={`leases-${room.id}`} session={session} roomId={room.id} />
        </div>
      </div>
    </section>
  );
}

/** What a message shows of itself: the task that posted it, its text and files, or "deleted"; "edited". */
function MessageText({ session, message: m }: { session: Session; message: Message }) {
  if (m.deletedAt !== null) return <p class="body deleted"><em>deleted</em></p>;
  return (
    <>
      {m.task !== null && <TaskMark task={m.task} />}
      <ImportanceMark importance={m.importance} />
      <p class="body">
        {m.body}{m.editedAt !== null && <span class="edited"> (edited)</span>}
        {m.streaming && <span class="stream-state" aria-live="polite"> <strong>streaming</strong></span>}
        {m.streamEnd === 'interrupted' && <span class="stream-state"> <strong>interrupted</strong></span>}
      </p>
      <Attachments session={session} attachments={m.attachments} />
    </>
  );
}

/** A message a task's creation or move posted: the task's title, and the state that move set. */
function TaskMark({ task }: { task: NonNullable<Message['task']> }) {
  return (
    <p class="task-mark">
      <a href="#/tasks">{task.kind === 'approval' ? 'Approval' : 'Task'}: {task.title}</a>{' '}
      <span class={`task-state state-${task.state}`}>{task.state}</span>
    </p>
  );
}

const EXCERPT = 60;
const excerpt = (text: string): string => (text.length > EXCERPT ? `${text.slice(0, EXCERPT - 1)}…` : text);

/** "reply to <author>: <its first words>" on a reply in the timeline, a link that opens its thread. */
function ReplyMark({ session, message: m, repliedTo, onThread }: { session: Session; message: Message; repliedTo?: Message; onThread: (rootId: string) => void }) {
  const rootId = m.threadId!;
  const what = repliedTo === undefined ? 'an earlier message'
    : repliedTo.deletedAt !== null ? `${nameOf(session, repliedTo.senderId)} (deleted)`
      : `${nameOf(session, repliedTo.senderId)}: “${excerpt(repliedTo.body)}”`;
  return (
    <a class="reply-mark" href={`#/rooms/${m.roomId}/thread/${rootId}`} onClick={(e) => { e.preventDefault(); onThread(rootId); }}>
      reply to {what}
    </a>
  );
}

const repliesLabel = (n: number): string => (n === 1 ? '1 reply' : `${n} replies`);

/** One message of the room, with Reply (its thread), and Edit and Delete for the agent's own. */
function MessageItem({ session, message: m, repliedTo, onChange, onThread, awaitingMe, onAcked }: {
  session: Session; message: Message; repliedTo?: Message; onChange: (id: string, fields: Partial<Message>) => void; onThread: (rootId: string) => void;
  awaitingMe: boolean; onAcked: (id: string, ack: Message['ack']) => void;
}) {
  const mine = m.senderId === session.me.id;
  const [editing, setEditing] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const { text, setText, error: editError, busy, submit: save } = useTextForm(async (body) => {
    const edited = await session.client.edit(m.roomId, m.id, body);
    onChange(m.id, { body: edited.body, editedAt: edited.editedAt });
    setEditing(false);
  });
  const remove = (): void => {
    setError(null);
    session.client.delete(m.roomId, m.id).then(
      () => onChange(m.id, { body: '', mentions: [], deletedAt: new Date().toISOString() }),
      (err) => setError(describeError(err)),
    );
  };
  const editId = `edit-${m.id}`;
  const mentionsMe = m.deletedAt === null && (m.mentions ?? []).includes(session.me.id);
  return (
    <li class={['message', mine && 'mine', mentionsMe && 'mentioned'].filter(Boolean).join(' ')}>
      <div class="meta">
        <span class="author">{nameOf(session, m.senderId)}</span> <time dateTime={m.createdAt}>{formatTime(m.createdAt)}</time>
        {mentionsMe && <span class="mention-mark"> mentions you</span>}
        {m.threadId !== null && <> <ReplyMark session={session} message={m} repliedTo={repliedTo} onThread={onThread} /></>}
      </div>
      {editing ? (
        <form class="edit" onSubmit={(e) => { e.preventDefault(); void save(); }}>
          <label for={editId}>Edit message</label>
          <textarea id={editId} rows={2} maxLength={16384} value={text} onInput={(e) => setText(e.currentTarget.value)} />
          <button type="submit" disabled={busy}>Save</button>
          <button type="button" class="secondary" onClick={() => setEditing(false)}>Cancel</button>
          {editError !== null && <p role="alert" class="error">{editError}</p>}
        </form>
      ) : <MessageText session={session} message={m} />}
      <div class="actions">
        {m.threadId === null && (m.replyCount ?? 0) > 0 && <span class="replies">{repliesLabel(m.replyCount!)}</span>}
        <AckControls session={session} message={m} awaitingMe={awaitingMe} onAcked={onAcked} />
        {m.deletedAt === null && <button type="button" class="secondary" onClick={() => onThread(m.threadId ?? m.id)}>Reply</button>}
        {mine && m.deletedAt === null && !editing && (
          <>
            <button type="button" class="secondary" onClick={() => { setText(m.body); setEditing(true); }}>Edit</button>
            <button type="button" class="secondary" onClick={remove}>Delete</button>
          </>
        )}
      </div>
      {error !== null && <p role="alert" class="error">{error}</p>}
    </li>
  );
}

/** A thread beside the conversation: its root, its replies (live), and a box to reply in it. */
function ThreadPanel({ session, roomId, rootId, request, members, onClose }: {
  session: Session; roomId: string; rootId: string; request: number; members: RoomMember[]; onClose: () => void;
}) {
  const { client } = session;
  const region = useRef<HTMLElement>(null);
  const shownFor = useRef(0);
  const [root, setRoot] = useState<Message | null>(null);
  const [replies, setReplies] = useState<Message[]>([]);
  const [loadError, setLoadError] = useState<string | null>(null);
  const addReplies = useCallback((incoming: Message[]) => {
    setReplies((current) => {
      const byId = new Map(current.map((m) => [m.id, m]));
      for (const m of incoming) byId.set(m.id, m);
      return [...byId.values()].sort((a, b) => a.seq - b.seq);
    });
  }, []);
  useEffect(() => {
    let live = true;
    const off = client.on('message', (m) => { if (m.roomId === roomId && m.threadId === rootId) addReplies([m]); });
    const offUpdated = client.on('messageUpdated', (u) => {
      setRoot((r) => (r?.id === u.id ? { ...r, body: u.body, editedAt: u.editedAt } : r));
      setReplies((list) => list.map((m) => (m.id === u.id ? { ...m, body: u.body, editedAt: u.editedAt } : m)));
    });
    const offDeleted = client.on('messageDeleted', (d) => {
      setRoot((r) => (r?.id === d.id ? { ...r, body: '', deletedAt: d.deletedAt } : r));
      setReplies((list) => list.map((m) => (m.id === d.id ? { ...m, body: '', deletedAt: d.deletedAt } : m)));
    });
    const load = async (): Promise<void> => {
      // Pages of replies until the end: a thread is read whole here.
      let afterSeq = 0;
      for (;;) {
        const page = await client.thread(roomId, rootId, { afterSeq, limit: 100 });
        if (!live) return;
        setRoot(page.root);
        addReplies(page.replies);
        if (!page.hasMore || page.replies.length === 0) return;
        afterSeq = page.replies[page.replies.length - 1]!.seq;
      }
    };
    load().catch((err: unknown) => live && setLoadError(describeError(err)));
    return () => { live = false; off(); offUpdated(); offDeleted(); };
  }, [client, roomId, rootId, addReplies]);
  // Each Reply brings the thread into view (on a phone it is below the conversation) and puts focus
  // in its box, once what is above the box is there (the root, or why it is not).
  const ready = root !== null || loadError !== null;
  useLayoutEffect(() => {
    const el = region.current;
    if (!el || !ready || shownFor.current === request) return;
    shownFor.current = request;
    el.scrollIntoView({ block: 'start' });
    const box = el.querySelector<HTMLTextAreaElement>('textarea');
    box?.focus({ preventScroll: true });
    if (box && box.getBoundingClientRect().bottom > window.innerHeight) box.scrollIntoView({ block: 'nearest' });
  }, [ready, request]);
  return (
    <section class="room-thread" ref={region} aria-labelledby="thread-heading">
      <h3 id="thread-heading">Thread</h3>
      <button type="button" class="secondary" onClick={onClose}>Close thread</button>
      {loadError !== null && <p role="alert" class="error">{loadError}</p>}
      {root === null ? <p>Loading…</p> : (
        <ol class="thread-messages">
          <li class="message root">
            <div class="meta"><span class="author">{nameOf(session, root.senderId)}</span> <time dateTime={root.createdAt}>{formatTime(root.createdAt)}</time></div>
            <MessageText session={session} message={root} />
          </li>
          {replies.map((m) => (
            <li key={m.id} class="message">
              <div class="meta"><span class="author">{nameOf(session, m.senderId)}</span> <time dateTime={m.createdAt}>{formatTime(m.createdAt)}</time></div>
              <MessageText session={session} message={m} />
            </li>
          ))}
        </ol>
      )}
      <Composer session={session} roomId={roomId} members={members} kind={threadComposer(session, roomId, rootId)} onSent={(m) => addReplies([m])} />
    </section>
  );
}

/** The room's members, kept current by presence updates (online, and someone new). */
function useMembers(session: Session, roomId: string): RoomMember[] | null {
  const { client } = session;
  const [members, setMembers] = useState<RoomMember[] | null>(null);
  useEffect(() => {
    let live = true;
    const load = (): void => { client.members(roomId).then((list) => live && setMembers(list), () => live && setMembers((m) => m ?? [])); };
    load();
    const offPresence = client.on('presence:update', (update) => {
      setMembers((list) => {
        if (list?.some((m) => m.agentId === update.agentId)) return list.map((m) => (m.agentId === update.agentId ? { ...m, online: update.status === 'online' } : m));
        load(); // someone not listed yet: a new member
        return list;
      });
    });
    const offState = client.on('connect', load);
    return () => { live = false; offPresence(); offState(); };
  }, [client, roomId]);
  return members;
}

/** The room's members who are online now. */
function Online({ members }: { members: RoomMember[] | null }) {
  const online = members?.filter((m) => m.online) ?? [];
  return (
    <aside class="online" aria-labelledby="online-heading">
      <h3 id="online-heading">Online</h3>
      {members === null ? <p>Loading…</p> : online.length === 0 ? <p>Nobody.</p> : (
        <ul>{online.map((m) => <li key={m.agentId}>{m.displayName}</li>)}</ul>
      )}
    </aside>
  );
}

type Doing = Pick<ActivityUpdate, 'agentId' | 'state' | 'text' | 'expiresAt'>;
/** The longest a state is shown without news (working's 120 s), whatever the clocks say. */
const ACTIVITY_MAX_MS = 120_000;

/**
 * "<display name> is typing" / "is working: <text>" for the other members (docs/console.md): from
 * the members' list, then `activity:update`; gone at `expiresAt`, on `idle`, or when they send.
 */
function Activity({ session, roomId, members }: { session: Session; roomId: string; members: RoomMember[] | null }) {
  const { client } = session;
  const [doing, setDoing] = useState<Map<string, Doing>>(new Map());
  const timers = useRef(new Map<string, ReturnType<typeof setTimeout>>());
  const show = useCallback((d: Doing) => {
    if (d.agentId === session.me.id) return;
    clearTimeout(timers.current.get(d.agentId));
    timers.current.delete(d.agentId);
    const left = d.expiresAt === null ? 0 : Math.min(Date.parse(d.expiresAt) - Date.now(), ACTIVITY_MAX_MS);
    const stop = (): void => setDoing((map) => { const next = new Map(map); next.delete(d.agentId); return next; });
    if (d.state === 'idle' || left <= 0) return stop();
    timers.current.set(d.agentId, setTimeout(() => { timers.current.delete(d.agentId); stop(); }, left));
    setDoing((map) => new Map(map).set(d.agentId, d));
  }, [session.me.id]);
  useEffect(() => {
    for (const m of members ?? []) if (m.activity) show({ agentId: m.agentId, ...m.activity });
  }, [members, show]);
  useEffect(() => {
    const offUpdate = client.on('activityUpdate', (u) => { if (u.roomId === roomId) show(u); });
    const offMessage = client.on('message', (m) => { if (m.roomId === roomId) show({ agentId: m.senderId, state: 'idle', text: '', expiresAt: null }); });
    const pending = timers.current;
    return () => { offUpdate(); offMessage(); for (const t of pending.values()) clearTimeout(t); pending.clear(); };
  }, [client, roomId, show]);
  return (
    <div class="activity" role="status">
      {[...doing.values()].map((d) => (
        <p key={d.agentId}>{members?.find((m) => m.agentId === d.agentId)?.displayName ?? nameOf(session, d.agentId)} {d.state === 'working' ? `is working${d.text === '' ? '' : `: ${d.text}`}` : 'is typing'}</p>
      ))}
    </div>
  );
}
