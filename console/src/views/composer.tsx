import { useLayoutEffect, useRef, useState } from 'preact/hooks';
import type { Message, RoomMember } from '@agent-messaging/client';
import type { Session } from '../session.js';
import { useTextForm } from '../text-form.js';

/** At most one `typing` per this long while the person types (it lasts 8 s on the service). */
const TYPING_EVERY_MS = 3_000;
const MAX_SUGGESTIONS = 8;

/** The `@letters` being typed just before the caret, if any: where it starts and its letters. */
function mentionAt(text: string, caret: number): { start: number; query: string } | null {
  const match = /(^|\s)@([a-z0-9-]*)$/i.exec(text.slice(0, caret));
  if (!match) return null;
  return { start: caret - match[2]!.length - 1, query: match[2]!.toLowerCase() };
}

/** The members whose `@name` is in the text as it is sent (a mention chosen and then erased is not). */
export function mentionedIn(text: string, members: RoomMember[]): string[] {
  const lower = text.toLowerCase();
  return members.filter((m) => new RegExp(`(^|[^a-z0-9-])@${m.name}(?![a-z0-9-])`).test(lower)).map((m) => m.agentId);
}

/** What a message box sends, and its names: the room's **Message** box or a thread's **Reply to thread**. */
export interface ComposerKind {
  /** The id of its text box, and the prefix of its other ids. */
  id: string;
  label: string;
  sendLabel: string;
  attachLabel: string;
  send(body: string, extras: { mentions?: string[]; attachments?: string[] }): Promise<Message>;
}

/** The room's own box: a new message in the room. */
export const roomComposer = (session: Session, roomId: string): ComposerKind => ({
  id: 'message', label: 'Message', sendLabel: 'Send', attachLabel: 'Attach file',
  send: (body, extras) => session.client.send(roomId, body, extras),
});

/** A thread's box: a reply to its root. */
export const threadComposer = (session: Session, roomId: string, rootId: string): ComposerKind => ({
  id: 'thread-reply', label: 'Reply to thread', sendLabel: 'Send reply', attachLabel: 'Attach file to reply',
  send: (body, extras) => session.client.reply(roomId, rootId, body, extras),
});

/**
 * A message box (`kind`: the room's **Message** or a thread's **Reply to thread**): Enter sends; `@`
 * and letters offer the matching members in a listbox (arrows, Enter or Tab to choose, Escape to
 * close, or a click), and the members named `@<name>` in the text go in `mentions`; typing shows the
 * room this agent is typing; **Attach file** uploads a file and attaches it to the next message sent
 * (docs/console.md).
 */
export function Composer({ session, roomId, members, kind, onSent }: {
  session: Session; roomId: string; members: RoomMember[]; kind: ComposerKind; onSent: (message: Message) => void;
}) {
  const { client } = session;
  const lastTyping = useRef(0);
  const box = useRef<HTMLTextAreaElement>(null);
  const caretAfter = useRef<number | null>(null);
  const [mention, setMention] = useState<{ start: number; query: string } | null>(null);
  const [active, setActive] = useState(0);
  const [file, setFile] = useState<File | null>(null);
  const fileInput = useRef<HTMLInputElement>(null);
  const { text, setText, error, busy, submit } = useTextForm(async (typed) => {
    // A file alone is sent with its name as the text (a message has one).
    const body = typed.trim() === '' && file !== null ? file.name : typed;
    const mentions = mentionedIn(body, members);
    const attachments = file === null ? [] : [(await client.uploadFile(file.name, file)).id];
    const message = await kind.send(body, {
      ...(mentions.length > 0 ? { mentions } : {}),
      ...(attachments.length > 0 ? { attachments } : {}),
    });
    lastTyping.current = 0; // the service shows this agent idle again once it sent
    setMention(null);
    setFile(null);
    if (fileInput.current) fileInput.current.value = '';
    onSent(message);
  }, () => file !== null);

  const suggestions = mention === null ? [] : members
    .filter((m) => m.agentId !== session.me.id)
    .filter((m) => m.name.startsWith(mention.query) || m.displayName.toLowerCase().includes(mention.query))
    .slice(0, MAX_SUGGESTIONS);
  const open = suggestions.length > 0;
  const optionId = (agentId: string): string => `${kind.id}-mention-${agentId}`;
  const listId = `${kind.id}-mention-options`;
  const helpId = `${kind.id}-help`;
  const attachId = `${kind.id}-attach`;

  // After a choice, the caret goes after the inserted name.
  useLayoutEffect(() => {
    if (caretAfter.current === null || !box.current) return;
    box.current.setSelectionRange(caretAfter.current, caretAfter.current);
    caretAfter.current = null;
  }, [text]);

  const typed = (value: string, caret: number): void => {
    setText(value);
    const found = mentionAt(value, caret);
    setMention(found);
    if (found?.query !== mention?.query) setActive(0);
    const now = Date.now();
    if (value.trim() === '') {
      if (lastTyping.current !== 0) void client.setActivity(roomId, 'idle').catch(() => undefined);
      lastTyping.current = 0;
    } else if (now - lastTyping.current >= TYPING_EVERY_MS) {
      lastTyping.current = now;
      void client.setActivity(roomId, 'typing').catch(() => undefined);
    }
  };

  const choose = (member: RoomMember): void => {
    // Where the caret is now (it may have moved since the letters were typed).
    const caret = box.current?.selectionStart ?? text.length;
    const at = mentionAt(text, caret);
    setMention(null);
    if (at === null) return;
    const inserted = `@${member.name} `;
    caretAfter.current = at.start + inserted.length;
    setText(text.slice(0, at.start) + inserted + text.slice(caret));
    box.current?.focus();
  };

  const onKeyDown = (event: KeyboardEvent): void => {
    if (open) {
      if (event.key === 'ArrowDown' || event.key === 'ArrowUp') {
        event.preventDefault();
        const step = event.key === 'ArrowDown' ? 1 : -1;
        setActive((i) => (i + step + suggestions.length) % suggestions.length);
        return;
      }
      if ((event.key === 'Enter' || event.key === 'Tab') && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        choose(suggestions[Math.min(active, suggestions.length - 1)]!);
        return;
      }
      if (event.key === 'Escape') {
        event.preventDefault();
        setMention(null);
        return;
      }
    }
    // Enter sends, Shift+Enter is a new line (and Enter while an input method composes is its own).
    if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      void submit();
    }
  };

  const current = open ? suggestions[Math.min(active, suggestions.length - 1)] : undefined;
  return (
    <form class="composer" onSubmit={(e) => { e.preventDefault(); void submit(); }}>
      <label for={kind.id}>{kind.label}</label>
      <div class="mention-wrap">
        <textarea id={kind.id} ref={box} rows={2} maxLength={16384} value={text}
          onInput={(e) => typed(e.currentTarget.value, e.currentTarget.selectionStart)}
          onKeyDown={onKeyDown} onBlur={() => setMention(null)}
          aria-describedby={helpId} aria-autocomplete="list" aria-controls={open ? listId : undefined}
          aria-activedescendant={current ? optionId(current.agentId) : undefined} />
        {open && (
          <ul id={listId} class="mention-options" role="listbox" aria-label="Members to mention">
            {suggestions.map((m) => (
              <li key={m.agentId} id={optionId(m.agentId)} role="option" aria-selected={m === current}
                // Chosen on mousedown, before the box loses focus (which closes the list).
                onMouseDown={(e) => { e.preventDefault(); choose(m); }}>
                {m.displayName} <span class="handle" aria-hidden="true">@{m.name}</span>
              </li>
            ))}
          </ul>
        )}
      </div>
      <p id={helpId} class="help">Enter sends, Shift+Enter starts a new line; @ and a name mentions a member.</p>
      <div class="composer-actions">
        <button type="submit" disabled={busy}>{kind.sendLabel}</button>
        <label for={attachId} class="attach-label">{kind.attachLabel}</label>
        <input id={attachId} ref={fileInput} type="file" onChange={(e) => setFile(e.currentTarget.files?.[0] ?? null)} />
      </div>
      {error !== null && <p role="alert" class="error">{error}</p>}
    </form>
  );
}
