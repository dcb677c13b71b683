// Runs Keel as a separate process (source or compiled binary) and reads the service URLs it logs.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Subprocess } from 'bun';
import { freePortsEnv, TEST_SECRET } from './platform';

export const ROOT = join(import.meta.dir, '..', '..');
export const BUN = process.execPath;

export interface KeelProcess {
  proc: Subprocess<'ignore', 'pipe', 'pipe'>;
  urls: Record<string, string>;
  stdout: () => string;
  stderr: () => string;
  /** SIGTERM, then the exit code. */
  stop(): Promise<number>;
}


/** Starts `cmd` and waits until every service in APP_SERVICES has logged its URL. */
export async function startKeel(cmd: string[], env: Record<string, string>, services: string[]): Promise<KeelProcess> {
  const dataDir = env.APP_DATA_DIR ?? mkdtempSync(join(tmpdir(), 'keel-proc-'));
  const proc = Bun.spawn(cmd, {
    cwd: ROOT,
    env: { ...process.env, NODE_ENV: 'test', APP_LOG_LEVEL: 'info', APP_API_SECRET: TEST_SECRET, APP_DATA_DIR: dataDir, APP_SERVICES: services.join(','), ...freePortsEnv(), ...env },
    stdout: 'pipe',
    stderr: 'pipe',
    stdin: 'ignore',
  });
  let out = '';
  let err = '';
  const urls: Record<string, string> = {};
  const pump = async (stream: ReadableStream<Uint8Array>, onText: (t: string) => void) => {
    const dec = new TextDecoder();
    for await (const chunk of stream) onText(dec.decode(chunk, { stream: true }));
  };
  void pump(proc.stdout, (t) => (out += t));
  void pump(proc.stderr, (t) => {
    err += t;
    for (const m of t.matchAll(/"msg":"service listening".*?"service":"(\w+)","url":"([^"]+)"/g)) urls[m[1]!] = m[2]!;
  });
  const deadline = Date.now() + 30_000;
  while (services.some((s) => !urls[s])) {
    if (proc.exitCode !== null) throw new Error(`keel exited with ${proc.exitCode}: ${err.slice(-2000)}`);
    if (Date.now() > deadline) throw new Error(`keel did not start in time: ${err.slice(-2000)}`);
    await Bun.sleep(50);
  }
  return {
    proc,
    urls,
    stdout: () => out,
    stderr: () => err,
    async stop() {
      proc.kill('SIGTERM');
      return await proc.exited;
    },
  };
}
