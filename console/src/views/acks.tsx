import { useCallback, useEffect, useState } from 'preact/hooks';
import type { Message } from '@agent-messaging/client';
import { describeError, type Session } from '../session.js';

// Importance and acknowledgements in a room (docs/acknowledgements.md).

/** A message's importance, in words, when it is not `normal`. */
export function ImportanceMark({ importance }: { importance: Message['importance'] }) {
  if (importance === 'normal') return null;
  return <span class={`importance importance-${importance}`}>{importance}</span>;
}

/**
 * The messages of the room awaiting the signed-in agent's acknowledgement (the inbox's
 * `filter=ack`), read again when a message asking for acknowledgements arrives; `acked` takes one
 * off once acknowledged.
 */
export function useAwaitingAcks(session: Session, roomId: string, messages: readonly Message[]): { awaiting: ReadonlySet<string>; acked: (id: string) => void } {
  const { client } = session;
  const [awaiting, setAwaiting] = useState<ReadonlySet<string>>(new Set());
  // Only messages that ask, from someone else, can add to the set: their count is the dependency.
  const asking = messages.filter((m) => m.ack !== null && m.senderId !== session.me.id && m.deletedAt === null).length;
  useEffect(() => {
    let live = true;
    if (asking === 0) return;
    client.inbox({ filter: 'ack', limit: 100 }).then((page) => {
      if (live) setAwaiting(new Set(page.messages.filter((m) => m.roomId === roomId).map((m) => m.id)));
    }, () => undefined);
    return () => { live = false; };
  }, [client, roomId, asking]);
  const acked = useCallback((id: string) => setAwaiting((set) => new Set([...set].filter((x) => x !== id))), []);
  return { awaiting, acked };
}

/**
 * On a message awaiting the agent's acknowledgement, **Acknowledge**; on the agent's own message
 * that asks for acknowledgements, "N of M acknowledged".
 */
export function AckControls({ session, message: m, awaitingMe, onAcked }: {
  session: Session; message: Message; awaitingMe: boolean; onAcked: (id: string, ack: Message['ack']) => void;
}) {
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  if (m.ack === null || m.deletedAt !== null) return null;
  if (m.senderId === session.me.id) return <span class="ack-count">{m.ack.acked} of {m.ack.required} acknowledged</span>;
  if (!awaitingMe) return null;
  const acknowledge = (): void => {
    setBusy(true);
    setError(null);
    session.client.ack(m.roomId, m.id).then(
      () => onAcked(m.id, m.ack === null ? null : { required: m.ack.required, acked: Math.min(m.ack.required, m.ack.acked + 1) }),
      (err) => { setError(describeError(err)); setBusy(false); },
    );
  };
  return (
    <>
      <button type="button" onClick={acknowledge} disabled={busy}>Acknowledge</button>
      {error !== null && <span role="alert" class="error">{error}</span>}
    </>
  );
}
