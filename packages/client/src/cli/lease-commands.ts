import type { Lease } from '../index.js';
import { leaseConflicts } from '../methods/leases.js';
import { AmsError } from '../errors.js';
import { optionalString, wholeNumber, type Command } from './command.js';
import { CONNECTION, json, print, printTable, withClient } from './with-client.js';

/** Leases on resources (docs/leases.md): a ROOM is an id or a slug. */

const leaseRow = (l: Lease): string[] => [l.id, l.resource, l.exclusive ? 'exclusive' : 'shared', l.holderId, l.expiresAt, `fence ${l.fence}`];

export const leaseCommands: Record<string, Command> = {
  lease: {
    usage: 'lease ROOM RESOURCE [--ttl <seconds>] [--shared] [--reason <text>] [--json]',
    summary: 'Take a lease on RESOURCE in ROOM ("I am changing this") for --ttl seconds (5..86400, default 3600); refused (exit 1) while another agent holds an overlapping one, which it names.',
    options: [...CONNECTION, 'ttl', 'shared', 'reason', 'json'],
    args: ['ROOM', 'RESOURCE'],
    fields: { resource: 'RESOURCE', ttlSeconds: '--ttl', reason: '--reason' },
    run(input) {
      const ttlSeconds = wholeNumber(optionalString(input, 'ttl'), '--ttl', 86_400);
      return withClient(input, async (client) => {
        const reason = optionalString(input, 'reason');
        try {
          const lease = await client.acquireLease(input.args[0]!, {
            resource: input.args[1]!, ...(ttlSeconds === undefined ? {} : { ttlSeconds }), ...(input.values.shared === true ? { exclusive: false } : {}),
            ...(reason === undefined ? {} : { reason }),
          });
          if (json(input)) print(lease);
          else console.log(`lease ${lease.id} on ${lease.resource} until ${lease.expiresAt}, fence ${lease.fence}`);
          return 0;
        } catch (err) {
          const conflicts = leaseConflicts(err);
          if (conflicts.length === 0) throw err;
          throw new AmsError('CONFLICT', `leased by another agent: ${conflicts.map((l) => `${l.resource} (${l.holderId} until ${l.expiresAt})`).join(', ')}`);
        }
      });
    },
  },
  'lease list': {
    usage: 'lease list ROOM [--resource <resource>] [--json]',
    summary: 'The live leases of ROOM, oldest first (with --resource, those overlapping it).',
    options: [...CONNECTION, 'resource', 'json'],
    args: ['ROOM'],
    fields: { resource: '--resource' },
    run: (input) => withClient(input, async (client) => {
      const resource = optionalString(input, 'resource');
      const leases = await client.leases(input.args[0]!, resource === undefined ? {} : { resource });
      if (json(input)) print(leases);
      else if (leases.length === 0) console.log('no leases');
      else printTable(leases.map(leaseRow));
      return 0;
    }),
  },
  'lease renew': {
    usage: 'lease renew ROOM ID [--ttl <seconds>] [--json]',
    summary: 'Renew a lease you hold for --ttl seconds (default 3600).',
    options: [...CONNECTION, 'ttl', 'json'],
    args: ['ROOM', 'ID'],
    fields: { ttlSeconds: '--ttl', leaseId: 'ID' },
    run(input) {
      const ttlSeconds = wholeNumber(optionalString(input, 'ttl'), '--ttl', 86_400);
      return withClient(input, async (client) => {
        const lease = await client.renewLease(input.args[0]!, input.args[1]!, ttlSeconds === undefined ? {} : { ttlSeconds });
        if (json(input)) print(lease);
        else console.log(`lease ${lease.id} on ${lease.resource} until ${lease.expiresAt}`);
        return 0;
      });
    },
  },
  'lease release': {
    usage: 'lease release ROOM ID',
    summary: 'Release a lease you hold (an admin: any).',
    options: [...CONNECTION],
    args: ['ROOM', 'ID'],
    fields: { leaseId: 'ID' },
    run: (input) => withClient(input, async (client) => {
      await client.releaseLease(input.args[0]!, input.args[1]!);
      console.log(`released ${input.args[1]!}`);
      return 0;
    }),
  },
};
