// What the suite makes once per test run and every file that needs it shares: the compiled binary
// (tests/platform/binary.test.ts and tests/ui/binary.test.ts) and the offline bun-typescript image
// (the template tests and the first run). `bun test` runs every file in one process, so a promise kept
// here is made by the first file that asks; the preload (tests/helpers/preload.ts) removes both at
// the end of the run. Each is made the way a user makes it: `bun run build` and `bun run image:bun-typescript`.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// Not from ./process: the preload imports this file, and that one loads the whole platform.
const ROOT = join(import.meta.dir, '..', '..');
const BUN = process.execPath;

export interface CommandResult {
  code: number;
  stdout: string;
  stderr: string;
}

async function run(cmd: string[], env: Record<string, string> = {}): Promise<CommandResult> {
  // Not spawnSync: a file's platform in this process goes on answering meanwhile.
  const proc = Bun.spawn(cmd, { cwd: ROOT, env: { ...process.env, ...env }, stdout: 'pipe', stderr: 'pipe' });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr };
}

/** This run's own directory and name (the preload sets them; a helper used without it makes its own). */
const runDir = () => (process.env.KEEL_TEST_RUN_DIR ??= mkdtempSync(join(tmpdir(), 'keel-run-')));
export const runId = () => (process.env.KEEL_TEST_RUN_ID ??= Date.now().toString(36));

/** The tag of this run's bun-typescript image (the preload removes it from the engine at the end). */
export const runBunImageTag = () => `keel/bun-typescript-run:${runId()}`;

let binary: Promise<string> | undefined;
/** `bun run build` into this run's directory, once; the path of the executable. */
export function keelBinary(): Promise<string> {
  return (binary ??= (async () => {
    const out = join(runDir(), 'keel');
    const r = await run([BUN, 'scripts/build.ts', out]);
    if (r.code !== 0) throw new Error(`bun run build failed: ${r.stderr.slice(-2000)}`);
    return out;
  })());
}

let bunImage: Promise<CommandResult & { tag: string }> | undefined;
/**
 * `bun run image:bun-typescript` under this run's tag, once: the same build (images/template-image.ts)
 * a workspace's first use runs. The command's result, so its own test can check what it printed.
 */
export function bunTypescriptImage(): Promise<CommandResult & { tag: string }> {
  return (bunImage ??= (async () => {
    const tag = runBunImageTag();
    const r = await run([BUN, 'run', 'image:bun-typescript'], { APP_WORKSPACE_BUN_IMAGE: tag });
    if (r.code !== 0) throw new Error(`bun run image:bun-typescript failed (${r.code}): ${r.stderr.slice(-2000)}`);
    return { ...r, tag };
  })());
}
