// A private nats-server for tests that need what the shared one may not have: a user and password,
// JetStream with a store on disk, and a restart on the same port and store.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Subprocess } from 'bun';
import { freePort } from '../../scripts/machine';

export interface TestNats {
  /** nats://user:pass@127.0.0.1:port, as APP_BUS takes it. */
  url: string;
  /** The same server without credentials (refused by it). */
  anonymousUrl: string;
  user: string;
  pass: string;
  port: number;
  stop(): Promise<void>;
  /** Stops the server and starts it again on the same port with the same JetStream store. */
  restart(): Promise<void>;
  /** Stops it and removes its store. */
  close(): Promise<void>;
}

async function answers(port: number): Promise<boolean> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/healthz?js-enabled-only=true`);
    return res.ok;
  } catch {
    return false;
  }
}

export async function startTestNats(opts: { user?: string; pass?: string } = {}): Promise<TestNats> {
  const user = opts.user ?? 'keel';
  const pass = opts.pass ?? `pw-${crypto.randomUUID().slice(0, 12)}`;
  const port = await freePort();
  const monitor = await freePort();
  const store = mkdtempSync(join(tmpdir(), 'keel-nats-'));
  let proc: Subprocess | undefined;

  async function start() {
    proc = Bun.spawn(['nats-server', '-a', '127.0.0.1', '-p', String(port), '-m', String(monitor), '-js', '-sd', store, '--user', user, '--pass', pass], {
      stdout: 'ignore',
      stderr: 'ignore',
    });
    for (let i = 0; i < 100; i++) {
      if (await answers(monitor)) return;
      if (proc.exitCode !== null) break;
      await Bun.sleep(50);
    }
    throw new Error('nats-server did not start');
  }
  async function stop() {
    if (!proc || proc.exitCode !== null) return;
    proc.kill('SIGTERM');
    await proc.exited;
  }
  await start();
  return {
    url: `nats://${user}:${pass}@127.0.0.1:${port}`,
    anonymousUrl: `nats://127.0.0.1:${port}`,
    user,
    pass,
    port,
    stop,
    async restart() {
      await stop();
      await start();
    },
    async close() {
      await stop();
      rmSync(store, { recursive: true, force: true });
    },
  };
}
