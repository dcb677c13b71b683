// The typed client's schema files (clients/typescript/src/generated) are what `npm run
// client:generate` writes from the services' documents today: regenerated into a temporary
// directory, each must equal the committed file byte for byte. A route, schema or error code changed
// without regenerating fails here, in CI.
import { afterAll, expect, test } from 'bun:test';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLIENT_SERVICES, GENERATED_DIR, generateClients } from '../../scripts/client-generate';

const dir = mkdtempSync(join(tmpdir(), 'keel-client-drift-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test(
  'the committed client schema files are what client:generate writes from the live documents',
  async () => {
    await generateClients(dir);
    expect(readdirSync(GENERATED_DIR).sort()).toEqual(CLIENT_SERVICES.map((s) => `${s}.d.ts`).sort());
    for (const service of CLIENT_SERVICES) {
      const fresh = readFileSync(join(dir, `${service}.d.ts`), 'utf8');
      const committed = readFileSync(join(GENERATED_DIR, `${service}.d.ts`), 'utf8');
      // On a difference: run `npm run client:generate` and commit src/generated.
      expect(committed === fresh, `clients/typescript/src/generated/${service}.d.ts is stale: run npm run client:generate`).toBe(true);
    }
  },
  120_000,
);
