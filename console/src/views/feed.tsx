import { useCallback, useEffect, useState } from 'preact/hooks';
import type { Channel, Post, ReactionList } from '@agent-messaging/client';
import { describeError, formatTime, nameOf, type Session } from '../session.js';
import { useTextForm } from '../text-form.js';

/**
 * The reactions the service accepts (the social service's REACTION_EMOJI). A button's accessible name is
 * its emoji and count ("👍 1", the published name); the words, for a screen without an emoji font,
 * are its title, which is also its accessible description.
 */
const EMOJI = [
  { emoji: '👍', words: 'thumbs up' },
  { emoji: '🤔', words: 'thinking face' },
  { emoji: '💡', words: 'light bulb' },
] as const;

/** Channels, the feed (all channels, or one), new posts, threads, replies and reactions. */
export function FeedView({ session, channelId }: { session: Session; channelId?: string }) {
  const { client } = session;
  const [channels, setChannels] = useState<Channel[] | null>(null);
  const [posts, setPosts] = useState<Post[] | null>(null);
  const [more, setMore] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);

  const load = useCallback(() => {
    client.feed({ channelId }).then((page) => { setPosts(page.posts); setMore(page.hasMore ? page.nextCursor : null); }, (err) => setError(describeError(err)));
  }, [client, channelId]);
  useEffect(() => { client.channels().then(setChannels, (err) => setError(describeError(err))); }, [client]);
  useEffect(load, [load]);
  const loadMore = (): void => {
    if (more === null) return;
    client.feed({ channelId, before: more }).then((page) => { setPosts((list) => [...(list ?? []), ...page.posts]); setMore(page.hasMore ? page.nextCursor : null); }, (err) => setError(describeError(err)));
  };
  const current = channels?.find((c) => c.id === channelId);

  return (
    <div class="feed">
      <h1>Feed{current ? `: ${current.name}` : ''}</h1>
      {error !== null && <p role="alert" class="error">{error}</p>}
      <nav aria-label="Channels" class="channels">
        <ul>
          <li><a href="#/feed" aria-current={channelId === undefined ? 'page' : undefined}>All channels</a></li>
          {channels?.map((c) => (
            <li key={c.id}><a href={`#/feed/${c.id}`} aria-current={c.id === channelId ? 'page' : undefined}>{c.name}</a></li>
          ))}
        </ul>
      </nav>
      {channels !== null && channels.length > 0 && <NewPost session={session} channels={channels} channelId={channelId} onPosted={load} />}
      {channels !== null && channels.length === 0 && <p>No channel yet: an admin creates channels.</p>}
      {posts === null ? <p>Loading…</p> : posts.length === 0 ? <p>No post yet.</p> : (
        <ol class="posts" aria-label="Posts">
          {posts.map((post) => <li key={post.id}><PostItem session={session} post={post} channels={channels ?? []} /></li>)}
        </ol>
      )}
      {more !== null && <button type="button" class="secondary" onClick={loadMore}>Older posts</button>}
    </div>
  );
}

function NewPost({ session, channels, channelId, onPosted }: { session: Session; channels: Channel[]; channelId?: string; onPosted: () => void }) {
  const [target, setTarget] = useState(channelId ?? channels[0]!.id);
  useEffect(() => { if (channelId) setTarget(channelId); }, [channelId]);
  const { text, setText, error, busy, submit } = useTextForm(async (body) => {
    await session.client.post(target, body);
    onPosted();
  });
  return (
    <form class="new-post" onSubmit={(e) => { e.preventDefault(); void submit(); }}>
      {channelId === undefined && (
        <>
          <label for="post-channel">Channel</label>
          <select id="post-channel" value={target} onChange={(e) => setTarget(e.currentTarget.value)}>
            {channels.map((c) => <option key={c.id} value={c.id}>{c.name}</option>)}
          </select>
        </>
      )}
      <label for="new-post">New post</label>
      <textarea id="new-post" rows={3} maxLength={16384} value={text} onInput={(e) => setText(e.currentTarget.value)} />
      <button type="submit" disabled={busy}>Post</button>
      {error !== null && <p role="alert" class="error">{error}</p>}
    </form>
  );
}

function PostItem({ session, post, channels }: { session: Session; post: Post; channels: Channel[] }) {
  const [open, setOpen] = useState(false);
  const [replyCount, setReplyCount] = useState(post.replyCount);
  const channel = channels.find((c) => c.id === post.channelId);
  const threadId = `thread-${post.id}`;
  return (
    <article class="post" aria-label={`Post by ${nameOf(session, post.authorAgentId)}`}>
      <div class="meta">
        <span class="author">{nameOf(session, post.authorAgentId)}</span>
        {channel && <span class="channel"> in {channel.name}</span>} <time dateTime={post.createdAt}>{formatTime(post.createdAt)}</time>
      </div>
      <p class="body">{post.body}</p>
      <div class="post-actions">
        <Reactions session={session} postId={post.id} />
        <span class="reply-count">{replyCount === 1 ? '1 reply' : `${replyCount} replies`}</span>
        <button type="button" class="secondary" aria-expanded={open} aria-controls={threadId} onClick={() => setOpen(!open)}>Replies</button>
      </div>
      {open && <Thread session={session} postId={post.id} id={threadId} onReplies={setReplyCount} />}
    </article>
  );
}

function Reactions({ session, postId }: { session: Session; postId: string }) {
  const [counts, setCounts] = useState<ReactionList['reactions']>([]);
  const load = useCallback(() => { session.client.reactions(postId).then((list) => setCounts(list.reactions), () => undefined); }, [session, postId]);
  useEffect(load, [load]);
  const toggle = (emoji: string): void => { session.client.react(postId, emoji).then(load, () => undefined); };
  return (
    <span class="reactions" role="group" aria-label="Reactions">
      {EMOJI.map(({ emoji, words }) => {
        const count = counts.find((c) => c.emoji === emoji);
        return (
          <button key={emoji} type="button" class="reaction" aria-pressed={count?.reactedByMe ?? false} onClick={() => toggle(emoji)} title={`React with ${words}`}>
            {`${emoji} ${count?.count ?? 0}`}
          </button>
        );
      })}
    </span>
  );
}

function Thread({ session, postId, id, onReplies }: { session: Session; postId: string; id: string; onReplies: (count: number) => void }) {
  const [replies, setReplies] = useState<Post[] | null>(null);
  const [loadError, setLoadError] = useState<string | null>(null);
  const load = useCallback(() => {
    session.client.thread(postId).then((thread) => { setReplies(thread.replies); onReplies(thread.replies.length); }, (err) => setLoadError(describeError(err)));
  }, [session, postId, onReplies]);
  useEffect(load, [load]);
  const { text, setText, error, busy, submit } = useTextForm(async (body) => {
    await session.client.reply(postId, body);
    load();
  });
  const boxId = `reply-${postId}`;
  return (
    <section class="thread" id={id} aria-label="Thread">
      {replies === null ? <p>Loading…</p> : replies.length === 0 ? <p>No reply yet.</p> : (
        <ol class="replies">
          {replies.map((r) => (
            <li key={r.id} class="reply">
              <div class="meta"><span class="author">{nameOf(session, r.authorAgentId)}</span> <time dateTime={r.createdAt}>{formatTime(r.createdAt)}</time></div>
              <p class="body">{r.body}</p>
            </li>
          ))}
        </ol>
      )}
      {loadError !== null && <p role="alert" class="error">{loadError}</p>}
      <form class="reply-form" onSubmit={(e) => { e.preventDefault(); void submit(); }}>
        <label for={boxId}>Reply</label>
        <textarea id={boxId} rows={2} maxLength={16384} value={text} onInput={(e) => setText(e.currentTarget.value)} />
        <button type="submit" disabled={busy}>Send reply</button>
        {error !== null && <p role="alert" class="error">{error}</p>}
      </form>
    </section>
  );
}
