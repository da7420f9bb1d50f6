import type { AgentSkill, AgentUpdate, AuditQuery } from '../index.js';
import { optionalString, required, UsageError, wholeNumber, type Command } from './command.js';
import { CONNECTION, json, print, printTable, withClient } from './with-client.js';

/** Agents, their API tokens and the audit log (docs/client.md): an AGENT is an id or a name. */

export const agentCommands: Record<string, Command> = {
  'agents list': {
    usage: 'agents list [--json]',
    summary: 'The agents of the service (admin in strict mode).',
    options: [...CONNECTION, 'json'],
    run: (input) => withClient(input, async (client) => {
      const agents = await client.agents();
      if (json(input)) print(agents);
      else printTable([['ID', 'NAME', 'ROLE', 'STATE', 'DISPLAY NAME'], ...agents.map((a) => [a.id, a.name, a.role, a.disabledAt === null ? 'active' : 'disabled', a.displayName])]);
      return 0;
    }),
  },
  'agents create': {
    usage: 'agents create --name <name> [--display-name <text>] [--role admin|agent]',
    summary: 'Create an agent (admin in strict mode) and print it as JSON.',
    options: [...CONNECTION, 'name', 'display-name', 'role', 'json'],
    fields: { name: '--name', displayName: '--display-name', role: '--role' },
    run(input) {
      const name = required(input, 'name', '--name <name>');
      const role = optionalString(input, 'role') ?? 'agent';
      if (role !== 'admin' && role !== 'agent') throw new UsageError('--role must be admin or agent');
      return withClient(input, async (client) => {
        print(await client.createAgent({ name, displayName: optionalString(input, 'display-name') ?? name, role }));
        return 0;
      });
    },
  },
  'agents update': {
    usage: "agents update AGENT [--display-name <text>] [--description <text>] [--skills '<JSON array>']",
    summary: 'Change an agent\'s display name, description or skills (the agent itself or an admin) and print it as JSON; --skills replaces them all: [{"id", "name", "description"?, "tags"?}].',
    options: [...CONNECTION, 'display-name', 'description', 'skills', 'json'],
    args: ['AGENT'],
    fields: { displayName: '--display-name', description: '--description', skills: '--skills', body: 'the command line' },
    run(input) {
      const changes: AgentUpdate = {};
      const displayName = optionalString(input, 'display-name');
      const description = optionalString(input, 'description');
      const skills = optionalString(input, 'skills');
      if (displayName !== undefined) changes.displayName = displayName;
      if (description !== undefined) changes.description = description;
      if (skills !== undefined) {
        try {
          changes.skills = JSON.parse(skills) as AgentSkill[];
        } catch {
          throw new UsageError('--skills must be a JSON array of {"id", "name", "description"?, "tags"?}');
        }
      }
      if (Object.keys(changes).length === 0) throw new UsageError('agents update needs --display-name, --description or --skills');
      return withClient(input, async (client) => {
        print(await client.updateAgent(input.args[0]!, changes));
        return 0;
      });
    },
  },
  'tokens issue': {
    usage: 'tokens issue AGENT [--expires-at <ISO timestamp>]',
    summary: 'Issue an API token for an agent (id or name) and print it as JSON (the token is shown once).',
    options: [...CONNECTION, 'expires-at', 'json'],
    args: ['AGENT'],
    fields: { expiresAt: '--expires-at' },
    run: (input) => withClient(input, async (client) => {
      const expiresAt = optionalString(input, 'expires-at');
      print(await client.issueToken(input.args[0]!, expiresAt === undefined ? {} : { expiresAt }));
      return 0;
    }),
  },
  tokens: {
    usage: 'tokens AGENT [--json]',
    summary: "An agent's (id or name) API tokens, revoked ones included, without secrets (admin); the prefix revokes one.",
    options: [...CONNECTION, 'json'],
    args: ['AGENT'],
    run: (input) => withClient(input, async (client) => {
      const tokens = await client.tokens(input.args[0]!);
      if (json(input)) print(tokens);
      else {
        const state = (t: { revokedAt: string | null; expiresAt: string | null }): string =>
          t.revokedAt !== null ? 'revoked' : t.expiresAt !== null && new Date(t.expiresAt) <= new Date() ? 'expired' : 'active';
        printTable([['PREFIX', 'STATE', 'CREATED', 'LAST USED', 'EXPIRES', 'SCOPES'],
          ...tokens.map((t) => [t.prefix ?? `oauth: ${t.clientName ?? t.id}`, state(t), t.createdAt, t.lastUsedAt ?? '-', t.expiresAt ?? '-', JSON.stringify(t.scopes)])]);
      }
      return 0;
    }),
  },
  'tokens revoke': {
    usage: 'tokens revoke PREFIX',
    summary: 'Revoke an API token by its prefix (agt_<12 hex>).',
    options: CONNECTION,
    args: ['PREFIX'],
    run: (input) => withClient(input, async (client) => {
      await client.revokeToken(input.args[0]!);
      console.log(`revoked ${input.args[0]!}`);
      return 0;
    }),
  },
  audit: {
    usage: 'audit [--event <event>] [--actor AGENT] [--subject <id>] [--before <record id>] [--limit <n>] [--json]',
    summary: 'The audit log, newest first (admins): who did what, about what (an agent, token, room, message, file or task), when; a page ending with "more" goes on with --before.',
    options: [...CONNECTION, 'event', 'actor', 'subject', 'before', 'limit', 'json'],
    args: [],
    fields: { event: '--event', actorId: '--actor', subjectId: '--subject', before: '--before', limit: '--limit' },
    run(input) {
      const limit = wholeNumber(optionalString(input, 'limit'), '--limit', 100);
      return withClient(input, async (client) => {
        const actor = optionalString(input, 'actor');
        const query: AuditQuery = {};
        for (const [field, option] of [['event', 'event'], ['subjectId', 'subject'], ['before', 'before']] as const) {
          const value = optionalString(input, option);
          if (value !== undefined) query[field] = value;
        }
        if (actor !== undefined) query.actorId = actor;
        if (limit !== undefined) query.limit = limit;
        const page = await client.audit(query);
        if (json(input)) {
          print(page);
          return 0;
        }
        // Agents by name; any other subject (a token, room, message, ...) by its id.
        const names = new Map((await client.directory()).agents.map((a) => [a.id, a.name]));
        const nameOf = (id: string | null): string => (id === null ? '-' : (names.get(id) ?? id));
        const rows = page.records.map((r) => [r.createdAt, r.event, nameOf(r.actorId), nameOf(r.subjectId), JSON.stringify(r.detail)]);
        if (rows.length === 0) console.log('no records');
        else printTable([['TIME', 'EVENT', 'ACTOR', 'SUBJECT', 'DETAIL'], ...rows]);
        if (page.hasMore) console.log(`more: --before ${page.nextCursor ?? ''}`);
        return 0;
      });
    },
  },
};
