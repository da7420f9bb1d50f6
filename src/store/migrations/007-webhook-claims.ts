import { sql, type Kysely, type Migration } from 'kysely';

/**
 * Webhook claims endpoint by endpoint (docs/webhooks.md, "Fairness"): the pending deliveries of one
 * endpoint in due order, so that claiming a few of one endpoint, or postponing all of an endpoint
 * in back-off, reads only that endpoint's pending rows. Same on both dialects.
 */
export const webhookClaims: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createIndex('webhook_deliveries_endpoint_due_idx')
      .on('webhook_deliveries')
      .columns(['endpoint_id', 'next_attempt_at'])
      .where(sql.ref('status'), '=', 'pending')
      .execute();
  },
};
