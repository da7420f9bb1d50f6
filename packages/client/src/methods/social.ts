import { ClientBase, enc } from '../client-base.js';
import type { Channel, NewChannel, Post, PostPage, ReactionList, ToggleResult } from '../types.js';

// The social feed (docs/protocol.md, Social feed): channels, posts and reactions. A post's replies
// and thread are `reply(postId, body)` and `thread(postId)`, methods shared with room messages
// (methods/messages.ts).

export abstract class SocialMethods extends ClientBase {
  async channels(): Promise<Channel[]> {
    return (await this.http.request<{ channels: Channel[] }>('GET', '/api/v1/social/channels')).channels;
  }

  createChannel(channel: NewChannel): Promise<Channel> {
    return this.http.request('POST', '/api/v1/social/channels', { body: channel });
  }

  /** Top-level posts of every channel, or of one with `channelId`, newest first. */
  feed(options: { channelId?: string; before?: string; limit?: number } = {}): Promise<PostPage> {
    const path = options.channelId === undefined ? '/api/v1/social/feed' : `/api/v1/social/channels/${enc(options.channelId)}/posts`;
    return this.http.request('GET', path, { query: { before: options.before, limit: options.limit } });
  }

  post(channelId: string, body: string): Promise<Post> {
    return this.http.request('POST', `/api/v1/social/channels/${enc(channelId)}/posts`, { body: { body } });
  }

  /** Toggles the agent's reaction (👍, 🤔 or 💡) on a post. */
  react(postId: string, emoji: string): Promise<ToggleResult> {
    return this.http.request('POST', `/api/v1/social/posts/${enc(postId)}/reactions`, { body: { emoji } });
  }

  reactions(postId: string): Promise<ReactionList> {
    return this.http.request('GET', `/api/v1/social/posts/${enc(postId)}/reactions`);
  }
}
