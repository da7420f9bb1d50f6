import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../context.js';
import {
  ChannelIdParams, ChannelList, ChannelSchema, CreateChannelInput, CreatePostInput, PageQuerySchema, PostIdParams,
  PostPageSchema, PostSchema, ReactionListSchema, ThreadSchema, ToggleReactionInput, ToggleResultSchema,
} from '@agent-messaging/protocol';
import type { PageQuery } from '../../core/social/social.service.js';
import { describe, SECURITY } from '../openapi.js';

const tags = ['social'];
const security = SECURITY.jwt;

export function socialRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.get('/api/v1/social/channels', {
    schema: describe({
      operationId: 'listChannels', summary: 'List channels', tags, security,
      success: { 200: { schema: ChannelList, description: 'Every channel' } },
      errors: [401],
    }),
  }, async (request) => ({ channels: await ctx.social.listChannels(request.principal) }));

  app.post('/api/v1/social/channels', {
    schema: describe({
      operationId: 'createChannel', summary: 'Create a channel (admin)', tags, security,
      body: CreateChannelInput,
      success: { 201: { schema: ChannelSchema, description: 'The created channel' } },
      errors: [401, 403, 409],
    }),
  }, async (request, reply) => {
    const channel = await ctx.social.createChannel(request.principal, request.body);
    return reply.status(201).send(channel);
  });

  app.get<{ Querystring: PageQuery }>('/api/v1/social/feed', {
    schema: describe({
      operationId: 'feed', summary: 'Top-level posts of every channel, newest first', tags, security,
      querystring: PageQuerySchema,
      success: { 200: { schema: PostPageSchema, description: 'A page of posts' } },
      errors: [400, 401],
    }),
  }, async (request) => {
    const { before, cursor, limit } = request.query;
    return ctx.social.feed(request.principal, { before, cursor, limit });
  });

  app.get<{ Params: { channelId: string }; Querystring: PageQuery }>('/api/v1/social/channels/:channelId/posts', {
    schema: describe({
      operationId: 'channelPosts', summary: 'Top-level posts of a channel, newest first', tags, security,
      params: ChannelIdParams, querystring: PageQuerySchema,
      success: { 200: { schema: PostPageSchema, description: 'A page of posts' } },
      errors: [400, 401, 404],
    }),
  }, async (request) => {
    const { before, cursor, limit } = request.query;
    return ctx.social.channelPosts(request.principal, request.params.channelId, { before, cursor, limit });
  });

  app.post<{ Params: { channelId: string } }>('/api/v1/social/channels/:channelId/posts', {
    schema: describe({
      operationId: 'createPost', summary: 'Post to a channel', tags, security,
      params: ChannelIdParams, body: CreatePostInput,
      success: { 201: { schema: PostSchema, description: 'The created post' } },
      errors: [401, 404],
    }),
  }, async (request, reply) => {
    const post = await ctx.social.createPost(request.principal, request.params.channelId, request.body);
    return reply.status(201).send(post);
  });

  app.get<{ Params: { id: string } }>('/api/v1/social/posts/:id/thread', {
    schema: describe({
      operationId: 'thread', summary: 'The thread of a post: its top-level post and every reply', tags, security,
      params: PostIdParams,
      success: { 200: { schema: ThreadSchema, description: 'The thread' } },
      errors: [400, 401, 404],
    }),
  }, async (request) => ctx.social.thread(request.principal, request.params.id));

  app.post<{ Params: { id: string } }>('/api/v1/social/posts/:id/replies', {
    schema: describe({
      operationId: 'reply', summary: 'Reply to a post (a reply to a reply joins the top-level post\'s thread)', tags, security,
      params: PostIdParams, body: CreatePostInput,
      success: { 201: { schema: PostSchema, description: 'The created reply' } },
      errors: [401, 404],
    }),
  }, async (request, reply) => {
    const post = await ctx.social.reply(request.principal, request.params.id, request.body);
    return reply.status(201).send(post);
  });

  app.post<{ Params: { id: string } }>('/api/v1/social/posts/:id/reactions', {
    schema: describe({
      operationId: 'react', summary: 'Toggle a reaction (👍, 🤔 or 💡) on a post', tags, security,
      params: PostIdParams, body: ToggleReactionInput,
      success: { 200: { schema: ToggleResultSchema, description: 'Whether the reaction was added or removed' } },
      errors: [401, 404],
    }),
  }, async (request) => ctx.social.toggleReaction(request.principal, request.params.id, request.body));

  app.get<{ Params: { id: string } }>('/api/v1/social/posts/:id/reactions', {
    schema: describe({
      operationId: 'reactions', summary: 'Reaction counts of a post', tags, security,
      params: PostIdParams,
      success: { 200: { schema: ReactionListSchema, description: 'Counts per emoji' } },
      errors: [400, 401, 404],
    }),
  }, async (request) => ({
    reactions: await ctx.social.listReactions(request.principal, request.params.id),
  }));
}
