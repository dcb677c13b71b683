// The workspaces service on PostgreSQL: one workspaces process per database (its containers, queues
// and streams live in the process), and its state kept in the database across a restart. On the
// PostgreSQL pass only: on SQLite the data dir is the process's own.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { SQL } from 'bun';
import { freshPostgresDatabase, onPostgres, startTestPlatform, type TestPlatform } from '../helpers/platform';
import { waitFor } from '../helpers/wait';

if (onPostgres()) {
  describe('workspaces on PostgreSQL', () => {
    let database: Awaited<ReturnType<typeof freshPostgresDatabase>>;
    let a: TestPlatform;

    beforeAll(async () => {
      database = await freshPostgresDatabase();
      a = await startTestPlatform({ services: ['workspaces'], env: { APP_DATABASE_URL: database.url } });
    });
    afterAll(async () => {
      await a?.close();
      await database?.drop();
    });

    test('a second Keel running workspaces on the same database refuses to start, naming APP_DATABASE_URL', async () => {
      const second = startTestPlatform({ services: ['workspaces'], env: { APP_DATABASE_URL: database.url } });
      await expect(second).rejects.toThrow(/^APP_DATABASE_URL: another Keel process runs the workspaces service on this database/);
      // The first one is untouched.
      const listed = await a.api('workspaces', '/api/workspaces');
      expect(listed.status, await listed.clone().text()).toBe(200);
    });

    test('a workspace is a row of the PostgreSQL database, and its events are relayed from its outbox there', async () => {
      const res = await a.api('workspaces', '/api/workspaces', { method: 'POST', json: { name: 'pg-one', template: 'minimal' } });
      expect(res.status).toBe(201);
      const { id } = (await res.json()) as { id: string };
      await waitFor('the workspace to run', async () => ((await (await a.api('workspaces', `/api/workspaces/${id}`)).json()) as { status: string }).status === 'running', 90_000);
      const sql = new SQL(database.url, { max: 1 });
      try {
        const [row] = await sql`SELECT owner, status FROM workspaces_workspaces WHERE id = ${id}`;
        expect(row).toEqual({ owner: 'alice', status: 'running' });
        await waitFor('the created and started events to be relayed', async () => {
          const rows = await sql`SELECT subject FROM workspaces_event_outbox WHERE sent_at IS NOT NULL AND payload::jsonb -> 'workspace' ->> 'id' = ${id}`;
          const subjects = rows.map((r: { subject: string }) => r.subject).sort();
          return subjects.includes('evt.workspace.created') && subjects.includes('evt.workspace.started');
        }, 10_000);
      } finally {
        await sql.close();
      }
      expect((await a.api('workspaces', `/api/workspaces/${id}?volumes=true`, { method: 'DELETE' })).status).toBe(200);
    }, 120_000);
  });
}
