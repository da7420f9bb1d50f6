import { describe, expect, it } from 'vitest';
import { AmsClient } from '../../packages/client/src/client.js';
import { ClientBase } from '../../packages/client/src/client-base.js';
import { AgentMethods } from '../../packages/client/src/methods/agents.js';
import { FileMethods } from '../../packages/client/src/methods/files.js';
import { MessageMethods } from '../../packages/client/src/methods/messages.js';
import { RoomMethods } from '../../packages/client/src/methods/rooms.js';
import { SocialMethods } from '../../packages/client/src/methods/social.js';
import { TaskMethods } from '../../packages/client/src/methods/tasks.js';
import { WebhookMethods } from '../../packages/client/src/methods/webhooks.js';

// AmsClient's methods are written by domain (packages/client/src/methods/*.ts) and put on its
// prototype in client.ts (docs/client.md). TypeScript believes the interface that says so; this
// checks that the prototype holds what it says, that no two files write one method, and that the
// public API is the one users have (a method removed or renamed breaks their code).

const own = (proto: object): string[] => Object.getOwnPropertyNames(proto).filter((name) => name !== 'constructor');

/** Every public method (and the `connected` getter) of AmsClient, as its users call them. */
const PUBLIC_API = [
  'ack', 'acks', 'acquireLease', 'addMember', 'agents', 'audit', 'channels', 'claimNextTask', 'claimTask', 'close', 'connect', 'connected',
  'createAgent', 'createChannel', 'createRoom', 'createSession', 'createTask', 'createWebhook', 'decide', 'delete', 'deleteWebhook',
  'directory', 'disableAgent', 'dm', 'downloadFile', 'edit', 'enableAgent', 'exportRoom', 'feed', 'fileInfo', 'heartbeatTask', 'history',
  'inbox', 'issueToken', 'jwt', 'lastSeqs', 'leases', 'markRead', 'members', 'moveTask', 'off', 'on', 'openDirectRoom', 'post', 'react',
  'reactions', 'releaseLease', 'removeMember', 'renewLease', 'reply', 'request', 'revokeAgentToken', 'revokeToken', 'rooms', 'search',
  'send', 'setActivity', 'task', 'tasks', 'thread', 'tokens', 'updateAgent', 'updateRoom', 'uploadFile',
  'webhookDeliveries', 'webhooks',
  'stream', 'streamedText',
];

/** What is not for users: the shared internals of client-base.ts and the connection's own. */
const INTERNAL = ['agentId', 'agentIdsOf', 'currentSource', 'dispatch', 'nextConnectionOr', 'report', 'roomId', 'scheduleReconnect', 'stopSocket',
  'noteStreamed', 'applyDelta', 'noteStreamEnded'];

describe('AmsClient, written a file per domain', () => {
  const domains = { MessageMethods, RoomMethods, TaskMethods, FileMethods, WebhookMethods, AgentMethods, SocialMethods };

  it('has every method of every domain file on its prototype, the very function', () => {
    for (const [domain, cls] of Object.entries(domains)) {
      for (const name of own(cls.prototype)) {
        expect(Object.getOwnPropertyDescriptor(AmsClient.prototype, name)?.value, `${domain}.${name}`).toBe((cls.prototype as unknown as Record<string, unknown>)[name]);
      }
    }
  });

  it('no method is written twice: by two domains, or by a domain and the shared base or the connection', () => {
    const writers = new Map<string, string[]>();
    const add = (where: string, names: string[]): void => {
      for (const name of names) writers.set(name, [...(writers.get(name) ?? []), where]);
    };
    add('client-base.ts', own(ClientBase.prototype));
    for (const [domain, cls] of Object.entries(domains)) add(domain, own(cls.prototype));
    const connection = own(AmsClient.prototype).filter((name) => !Object.values(domains).some((cls) => Object.hasOwn(cls.prototype, name)));
    add('client.ts', connection);
    expect([...writers].filter(([, where]) => where.length > 1)).toEqual([]);
  });

  it('offers users the same methods as before the split, and nothing more by accident', () => {
    const names = new Set([...own(ClientBase.prototype), ...own(AmsClient.prototype)]);
    expect([...names].filter((name) => !INTERNAL.includes(name)).sort()).toEqual([...PUBLIC_API].sort());
    for (const name of PUBLIC_API) {
      if (name === 'connected') continue;
      expect(typeof (AmsClient.prototype as unknown as Record<string, unknown>)[name], name).toBe('function');
    }
  });
});
