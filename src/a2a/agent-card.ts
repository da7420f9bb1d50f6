import { A2A_PROTOCOL_VERSION, AgentCard } from '@a2a-js/sdk';
import { duplicateInterfacesForLegacy } from '@a2a-js/sdk/compat/v0_3';
import type { Agent } from '../core/agents/agents.store.js';
import { packageVersion } from '../config/version.js';

/** Where an agent's A2A interface lives: `<base>/a2a/<agent name>` (docs/a2a.md). */
export const A2A_PREFIX = '/a2a';
export const interfaceUrl = (baseUrl: string, agentName: string): string => `${baseUrl}${A2A_PREFIX}/${encodeURIComponent(agentName)}`;

/** The security scheme's name on every card: HTTP Bearer, a JWT or an API token of this service. */
export const BEARER_SCHEME = 'bearer';

const VERSION = packageVersion();

/**
 * The agent card of one agent of this service (docs/a2a.md, Agent cards): its display name and
 * description, the service's version, its JSON-RPC interface (A2A 1.0, and 0.3 for older clients,
 * at the same URL), streaming, text and JSON in and out, its skills, and HTTP Bearer as the one
 * security scheme. The JSON form adds `url`, `protocolVersion` and `preferredTransport` at the top,
 * which 0.3 clients read and 1.0 clients ignore.
 */
export function agentCard(agent: Agent, baseUrl: string): Record<string, unknown> {
  const url = interfaceUrl(baseUrl, agent.name);
  const card: AgentCard = {
    name: agent.displayName,
    description: agent.description,
    supportedInterfaces: duplicateInterfacesForLegacy([{ url, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: A2A_PROTOCOL_VERSION }], ['JSONRPC']),
    provider: undefined,
    version: VERSION,
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {
      [BEARER_SCHEME]: {
        scheme: {
          $case: 'httpAuthSecurityScheme',
          value: { description: 'A session JWT or an API token of an agent of this service', scheme: 'Bearer', bearerFormat: 'JWT or API token' },
        },
      },
    },
    securityRequirements: [{ schemes: { [BEARER_SCHEME]: { list: [] } } }],
    defaultInputModes: ['text/plain', 'application/json'],
    defaultOutputModes: ['text/plain', 'application/json'],
    skills: agent.skills.map((skill) => ({
      id: skill.id,
      name: skill.name,
      description: skill.description,
      tags: [...skill.tags],
      examples: [],
      inputModes: [],
      outputModes: [],
      securityRequirements: [],
    })),
    signatures: [],
  };
  // The SDK's JSON form leaves out empty values; the A2A specification requires `description` (a
  // string) and `skills` (an array) on every card, so they are always written.
  const json = AgentCard.toJSON(card) as Record<string, unknown>;
  return { ...json, description: agent.description, skills: json['skills'] ?? [], url, protocolVersion: A2A_PROTOCOL_VERSION, preferredTransport: 'JSONRPC' };
}
