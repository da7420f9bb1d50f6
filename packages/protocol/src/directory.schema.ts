import { agentProfileFields } from './agents.schema.js';
import { IdString, RoleSchema } from './common.schema.js';
import { Type } from './text.js';

export const DirectoryQuerySchema = Type.Object({ role: Type.Optional(Type.Union([RoleSchema, Type.Literal('')], { description: 'Only agents of this role; absent or empty: every role' })) });
export const DirectoryParams = Type.Object({ companyId: Type.String({ description: 'This deployment\'s COMPANY_ID (default "default")' }) });

export const DirectorySchema = Type.Object(
  {
    companyId: Type.String(),
    agents: Type.Array(
      Type.Object(
        { id: IdString(), name: Type.String(), displayName: Type.String(), role: RoleSchema, online: Type.Boolean({ description: 'Has a live WebSocket connection' }), ...agentProfileFields },
        { title: 'DirectoryEntry' },
      ),
    ),
    total: Type.Integer({ minimum: 0, description: 'Number of agents returned, after the role filter' }),
  },
  { title: 'Directory' },
);
