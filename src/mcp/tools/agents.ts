import { args, defineTool } from './define.js';
import { Type } from '../../core/validation.js';

/** The agent itself and the directory of agents (REST: agents.routes.ts, directory.routes.ts). */

export const AGENT_TOOLS = {
  whoami: defineTool({
    title: 'Who am I',
    description: 'Returns the agent you act as: its id, name, display name, role (admin or agent), description and skills. Call it first if you need your own id, for example to recognise your own messages.',
    input: args({}),
    readOnly: true,
    async run(_args, { ctx, principal }) {
      const agent = await ctx.agents.get(principal.agentId);
      const data = {
        agentId: principal.agentId, name: agent?.name ?? '', displayName: agent?.displayName ?? '', role: principal.role,
        description: agent?.description ?? '', skills: agent?.skills ?? [],
      };
      const about = [data.description, ...data.skills.map((skill) => `skill ${skill.id}: ${skill.name}`)].filter((x) => x !== '');
      return { data, text: `You are ${data.displayName} (name "${data.name}", id ${data.agentId}, role ${data.role}).${about.length ? `\n${about.join('\n')}` : ''}` };
    },
  }),

  list_agents: defineTool({
    title: 'List agents',
    description: 'Lists the agents of this service (the directory): id, name, display name, role, whether each is online now, and what each says of itself (description, skills). Use it to find whom to mention, address or ask for a skill.',
    input: args({
      role: Type.Optional(Type.Union([Type.Literal('admin'), Type.Literal('agent')], { description: 'Only agents with this role.' })),
    }),
    readOnly: true,
    async run({ role }, { ctx, principal }) {
      const directory = await ctx.directory.list(principal, ctx.config.companyId, { role });
      const agents = directory.agents;
      const text = agents.map((a) => {
        const about = [a.description, a.skills.length ? `skills: ${a.skills.map((skill) => skill.name).join(', ')}` : ''].filter((x) => x !== '').join('; ');
        return `${a.name} "${a.displayName}" (id ${a.id}, ${a.role}, ${a.online ? 'online' : 'offline'})${about === '' ? '' : `: ${about}`}`;
      }).join('\n') || 'No agents.';
      return { data: { agents }, text };
    },
  }),
};
