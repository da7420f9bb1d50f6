import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../context.js';
import type { PageQuery } from '../../core/social/social.service.js';

export function socialRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.get('/api/v1/social/channels', async (request) => ({ channels: await ctx.social.listChannels(request.principal) }));

  app.post('/api/v1/social/channels', async (request, reply) => {
    const channel = await ctx.social.createChannel(request.principal, request.body);
    return reply.status(201).send(channel);
  });

  app.get<{ Querystring: PageQuery }>('/api/v1/social/feed', async (request) => {
    const { before, cursor, limit } = request.query;
    return ctx.social.feed(request.principal, { before, cursor, limit });
  });

  app.get<{ Params: { channelId: string }; Querystring: PageQuery }>('/api/v1/social/channels/:channelId/posts', async (request) => {
    const { before, cursor, limit } = request.query;
    return ctx.social.channelPosts(request.principal, request.params.channelId, { before, cursor, limit });
  });

  app.post<{ Params: { channelId: string } }>('/api/v1/social/channels/:channelId/posts', async (request, reply) => {
    const post = await ctx.social.createPost(request.principal, request.params.channelId, request.body);
    return reply.status(201).send(post);
  });

  app.get<{ Params: { id: string } }>('/api/v1/social/posts/:id/thread', async (request) => ctx.social.thread(request.principal, request.params.id));

  app.post<{ Params: { id: string } }>('/api/v1/social/posts/:id/replies', async (request, reply) => {
    const post = await ctx.social.reply(request.principal, request.params.id, request.body);
    return reply.status(201).send(post);
  });

  app.post<{ Params: { id: string } }>('/api/v1/social/posts/:id/reactions', async (request) =>
    ctx.social.toggleReaction(request.principal, request.params.id, request.body));

  app.get<{ Params: { id: string } }>('/api/v1/social/posts/:id/reactions', async (request) => ({
    reactions: await ctx.social.listReactions(request.principal, request.params.id),
  }));
}
