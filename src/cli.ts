// Operator commands, shared by `bun src/cli.ts` and the compiled binary (src/bin.ts): serve, token,
// healthcheck, image. Answers go to stdout; problems to stderr with exit 1, a wrong command line
// with the usage and exit 2 (as POSIX tools do), so scripts can tell the two apart.
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig, readString, type Env } from './platform/config';
import { mintToken } from './platform/auth/workspace-token';
import pkg from '../package.json';

const USAGE = `usage:
  keel [serve]                                         run the services of this config (APP_SERVICES; all five by default)
  keel token --sub <actor> [--ttl 1h] [--role admin]   print a workspace-API token, signed with APP_API_SECRET or the data dir's api-secret
  keel healthcheck                                     GET /health of every service this config runs, one line each (exit 0 when all answer ok)
  keel image minimal|bun-typescript                    build a template's image into DOCKER_HOST's engine (minimal: offline from busybox-static;
                                                       bun-typescript: from its Dockerfile where a registry answers, else offline from this machine's bun)
  keel login | keel ws list|create|exec|logs|shell|cp|preview|delete   the SDK's client commands (keel ws --help; docs/sdk.md)
  keel --help | -h | --version`;

/** A wrong command line: the message, then the usage, exit 2. */
export class UsageError extends Error {}

export function parseTtl(s: string): number {
  const m = /^(\d+)([smhd]?)$/.exec(s);
  if (!m) throw new UsageError('--ttl must look like 90s, 15m, 1h or 7d');
  return Number(m[1]) * { '': 1, s: 1, m: 60, h: 3600, d: 86400 }[m[2] as '' | 's' | 'm' | 'h' | 'd'];
}

export const CLI_COMMANDS = ['serve', 'token', 'healthcheck', 'image', 'ws', 'login'];

/** node:util parseArgs, its complaints (unknown option, missing value) turned into usage errors. */
function parseOptions<O extends NonNullable<Parameters<typeof parseArgs>[0]>['options']>(args: string[], options: O) {
  try {
    return parseArgs({ args, options, strict: true, allowPositionals: false }).values;
  } catch (e) {
    throw new UsageError((e as Error).message.split('\n')[0]!);
  }
}

/**
 * The secret `token` signs with. Unlike the server in dev mode it never generates one: a token signed
 * with a secret no server has would be refused by every server, so none existing is an error.
 */
function existingSecret(env: Env): void {
  if (env.APP_API_SECRET) return; // loadConfig checks its form
  const dataDir = resolve(readString(env, 'APP_DATA_DIR', './data'));
  const file = join(dataDir, 'api-secret');
  if (!existsSync(file)) {
    throw new Error(`no API secret to sign with: APP_API_SECRET is not set and ${file} does not exist (the server writes it on its first start in dev mode; or set APP_API_SECRET to the server's)`);
  }
  if (!/^[0-9a-f]{64}$/i.test(readFileSync(file, 'utf8').trim())) throw new Error(`${file} does not hold 64 hexadecimal characters; set APP_API_SECRET to the server's secret`);
}

async function token(args: string[]) {
  const values = parseOptions(args, { sub: { type: 'string' }, ttl: { type: 'string', default: '1h' }, role: { type: 'string' } });
  if (!values.sub) throw new UsageError('--sub is required');
  if (values.role !== undefined && values.role !== 'admin') throw new UsageError('--role takes only admin');
  const ttlSeconds = parseTtl(values.ttl as string);
  existingSecret(process.env);
  const config = loadConfig();
  process.stdout.write(mintToken(config.apiSecret, { sub: values.sub as string, ttlSeconds, role: values.role as 'admin' | undefined }) + '\n');
}

async function healthcheck(args: string[]) {
  parseOptions(args, {});
  const config = loadConfig();
  const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
  let failed = 0;
  for (const name of config.services) {
    const url = `http://${host.includes(':') ? `[${host}]` : host}:${config.ports[name]}/health`;
    const res = await fetch(url, { signal: AbortSignal.timeout(2000) }).catch((e: Error) => e);
    const body = res instanceof Response && res.status === 200 ? ((await res.json().catch(() => null)) as { status?: string } | null) : null;
    if (body?.status === 'ok') {
      process.stdout.write(`${name} ${url} ok\n`);
    } else {
      failed++;
      const why = res instanceof Response ? `answered ${res.status}${res.status === 200 ? ' without status ok' : ''}` : res.name === 'TimeoutError' ? 'no answer within 2 s' : 'not reachable';
      process.stderr.write(`${name} ${url} ${why}\n`);
    }
  }
  if (failed) throw new Error(`${failed} of ${config.services.length} services not healthy`);
}

async function image(args: string[]) {
  const [name, ...extra] = args;
  const { createTemplateRegistry } = await import('./services/workspaces/images/templates');
  const template = name ? createTemplateRegistry().get(name) : undefined;
  if (!template?.build || extra.length) throw new UsageError('usage: keel image minimal|bun-typescript');
  const { createEngine } = await import('./services/workspaces/engine/docker');
  const { buildTemplateImage, templateImage } = await import('./services/workspaces/images/template-image');
  const { loadWorkspacesConfig } = await import('./services/workspaces/workspaces.config');
  const settings = loadWorkspacesConfig(process.env);
  const ref = templateImage(template, settings);
  // Progress to stderr only when asked (KEEL_VERBOSE), so stdout stays the one `built <tag>` line.
  const quiet = { info: (m: string) => process.env.KEEL_VERBOSE && process.stderr.write(`${m}\n`), warn: (m: string, f?: Record<string, unknown>) => process.stderr.write(`${m}: ${String(f?.reason ?? '')}\n`) };
  await buildTemplateImage(createEngine(process.env.DOCKER_HOST || undefined), template, ref, settings, quiet);
  process.stdout.write(`built ${ref}\n`);
}

/** Runs one command line; resolves when done (serve: when the services stop), throws UsageError or Error. */
export async function runCli(argv: string[]): Promise<void> {
  const [cmd, ...rest] = argv;
  if (cmd === '--help' || cmd === '-h' || cmd === 'help') return void process.stdout.write(USAGE + '\n');
  if (cmd === '--version') {
    const { BUILT_COMMIT } = await import('./platform/http/health');
    return void process.stdout.write(`keel ${pkg.version} (commit ${BUILT_COMMIT})\n`);
  }
  if (cmd === 'serve') {
    if (rest.length) throw new UsageError('serve takes no arguments: configure it with APP_* variables');
    const { serve } = await import('./main');
    return serve();
  }
  if (cmd === 'token') return token(rest);
  if (cmd === 'healthcheck') return healthcheck(rest);
  if (cmd === 'image') return image(rest);
  if (cmd === 'ws' || cmd === 'login') {
    // The client commands live in the SDK (clients/typescript/src/cli.ts), the package's `keel` bin.
    const { runKeelCli, reportFailure } = await import('../clients/typescript/src/cli');
    process.exitCode = await runKeelCli(argv).catch((e) => reportFailure(e));
    return;
  }
  throw new UsageError(cmd === undefined ? 'a command is required' : `unknown command ${JSON.stringify(cmd.slice(0, 40))}`);
}

/** The exit status and messages of a command line: 2 with the usage for a wrong one, 1 for a problem. */
export function cliFailed(e: unknown): never {
  if (e instanceof UsageError) {
    process.stderr.write(`keel: ${e.message}\n${USAGE}\n`);
    process.exit(2);
  }
  process.stderr.write(`keel: ${(e as Error).message}\n`);
  process.exit(1);
}

// Alone, as the binary: serve.
if (import.meta.main) await runCli(process.argv.length > 2 ? process.argv.slice(2) : ['serve']).catch(cliFailed);
