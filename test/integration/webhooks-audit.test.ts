import { sql } from 'kysely';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { newAgent, type TestAgent } from '../helpers/api.js';
import { TEST_DIALECT } from '../helpers/server.js';
import { useTestServer } from '../helpers/suite.js';

// A webhook's deletion and its `webhook-deleted` audit record commit in one transaction: both are
// there, or neither is (on the suite's engine, AMS_TEST_DATABASE).

describe('webhook deletion and its audit record, one transaction', () => {
  const t = useTestServer({ config: { webhooks: { retryScheduleSeconds: [1], allowPrivateTargets: true } } });
  let owner: TestAgent;

  beforeAll(async () => {
    owner = await newAgent(t.api);
  });

  const register = async (): Promise<string> => {
    const res = await t.api.post(`/api/v1/agents/${owner.id}/webhooks`, { url: 'http://127.0.0.1:9/hook' }, { jwt: owner.jwt });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return (res.body as { id: string }).id;
  };
  const remove = (id: string) => t.api.delete(`/api/v1/agents/${owner.id}/webhooks/${id}`, { jwt: owner.jwt });
  const endpointThere = async (id: string): Promise<boolean> =>
    (await t.server.app.ctx.database.db.selectFrom('webhook_endpoints').select('id').where('id', '=', id).executeTakeFirst()) !== undefined;
  const deletionRecords = async (id: string): Promise<number> =>
    (await t.server.app.ctx.database.db.selectFrom('audit_log').select('id').where('event', '=', 'webhook-deleted').where('subject_id', '=', id).execute()).length;

  /** Makes every `webhook-deleted` audit insert fail, as a database fault in the middle of the delete. */
  const failDeletionRecords = async (): Promise<void> => {
    const db = t.server.app.ctx.database.db;
    if (TEST_DIALECT === 'sqlite') {
      await sql`CREATE TRIGGER fail_webhook_deleted BEFORE INSERT ON audit_log WHEN NEW.event = 'webhook-deleted' BEGIN SELECT RAISE(ABORT, 'injected fault'); END`.execute(db);
    } else {
      await sql`CREATE FUNCTION fail_webhook_deleted() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'injected fault'; END $$ LANGUAGE plpgsql`.execute(db);
      await sql`CREATE TRIGGER fail_webhook_deleted BEFORE INSERT ON audit_log FOR EACH ROW WHEN (NEW.event = 'webhook-deleted') EXECUTE FUNCTION fail_webhook_deleted()`.execute(db);
    }
  };

  afterEach(async () => {
    const db = t.server.app.ctx.database.db;
    if (TEST_DIALECT === 'sqlite') {
      await sql`DROP TRIGGER IF EXISTS fail_webhook_deleted`.execute(db);
    } else {
      await sql`DROP TRIGGER IF EXISTS fail_webhook_deleted ON audit_log`.execute(db);
      await sql`DROP FUNCTION IF EXISTS fail_webhook_deleted()`.execute(db);
    }
  });

  it('a deletion leaves the endpoint gone and exactly one record of it', async () => {
    const id = await register();
    expect((await remove(id)).status).toBe(204);
    expect(await endpointThere(id)).toBe(false);
    expect(await deletionRecords(id)).toBe(1);
    // A second delete finds nothing and records nothing.
    expect((await remove(id)).status).toBe(404);
    expect(await deletionRecords(id)).toBe(1);
  });

  it('when the record cannot be written the deletion is rolled back: the endpoint stays, no record', async () => {
    const id = await register();
    await failDeletionRecords();
    expect((await remove(id)).status).toBe(500);
    expect(await endpointThere(id)).toBe(true);
    expect(await deletionRecords(id)).toBe(0);
  });
});
