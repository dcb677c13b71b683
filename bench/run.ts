// `bun run bench [name...]`: runs every bench/*.bench.ts (or the named ones) in one run, one after
// the other so they do not compete for the two cores, and writes the figures to bench/results.json.
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { prepareMachine } from '../scripts/machine';

const machine = await prepareMachine();
Object.assign(process.env, machine.env);

const only = process.argv.slice(2);
const files = readdirSync(import.meta.dir)
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => only.length === 0 || only.some((o) => f.startsWith(o)))
  .sort();
const results: Record<string, unknown> = { at: new Date().toISOString(), cpus: navigator.hardwareConcurrency, bun: Bun.version };
let failed = false;
for (const f of files) {
  console.log(`\n# ${f}`);
  try {
    const mod = (await import(join(import.meta.dir, f))) as { run(): Promise<Record<string, unknown>> };
    results[f.replace('.bench.ts', '')] = await mod.run();
  } catch (e) {
    failed = true;
    console.error(`${f} failed: ${(e as Error).message}`);
    results[f.replace('.bench.ts', '')] = { error: (e as Error).message };
  }
}
writeFileSync(join(import.meta.dir, 'results.json'), JSON.stringify(results, null, 2) + '\n');
console.log('\nwrote bench/results.json');
machine.stop();
process.exit(failed ? 1 : 0);
