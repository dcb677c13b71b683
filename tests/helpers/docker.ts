// The Docker engine as tests see it: the docker CLI against DOCKER_HOST, waiting helpers and
// label-based cleanup, so every test file removes exactly the containers and volumes its Keel made.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { requireTestEnv } from './platform';
import { removeRules } from '../../src/services/workspaces/network/firewall';

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `docker <args>` against the test engine. */
export function docker(...args: string[]): CliResult {
  const host = requireTestEnv('DOCKER_HOST');
  const r = Bun.spawnSync(['docker', ...args], { env: { ...process.env, DOCKER_HOST: host }, stdout: 'pipe', stderr: 'pipe' });
  return { code: r.exitCode ?? -1, stdout: r.stdout.toString().trim(), stderr: r.stderr.toString().trim() };
}

/** `docker inspect` of one object as JSON, or null when the engine has no such object. */
export function inspect(kind: 'container' | 'volume' | 'image', ref: string): any | null {
  const r = docker(kind, 'inspect', ref);
  if (r.code !== 0) return null;
  return JSON.parse(r.stdout)[0] ?? null;
}

/** The engine label value that marks one Keel's containers (kept in its data dir). */
export function keelInstance(dataDir: string): string {
  return readFileSync(join(dataDir, 'workspaces-instance'), 'utf8').trim();
}

/** Removes every container, volume and network a Keel instance made, and its firewall rules. */
export async function removeInstanceObjects(instance: string) {
  const filter = `label=dev.keel.instance=${instance}`;
  const ids = docker('ps', '-aq', '--filter', filter).stdout.split('\n').filter(Boolean);
  if (ids.length) docker('rm', '-f', '-v', ...ids);
  const vols = docker('volume', 'ls', '-q', '--filter', filter).stdout.split('\n').filter(Boolean);
  if (vols.length) docker('volume', 'rm', '-f', ...vols);
  const nets = docker('network', 'ls', '-q', '--filter', filter).stdout.split('\n').filter(Boolean);
  if (nets.length) docker('network', 'rm', ...nets);
  await removeRules(instance);
}

// Polling lives in wait.ts (no engine in it, for tests/unit); re-exported here where most tests take it.
export { waitFor } from './wait';
