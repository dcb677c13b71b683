// Operator commands: `token` mints a workspace-API token from APP_API_SECRET.
import { parseArgs } from 'node:util';
import { loadConfig } from './platform/config';
import { mintToken } from './platform/auth/workspace-token';

const USAGE = `usage:
  keel token --sub <actor> [--ttl 1h] [--role admin]   print a workspace-API token
  keel healthcheck                                     GET /health of every service this config runs (exit 0 when all answer ok)
  keel image minimal|bun-typescript                    build a template's image into DOCKER_HOST's engine (minimal: offline from busybox-static;
                                                       bun-typescript: from its Dockerfile where a registry answers, else offline from this machine's bun)`;

export function parseTtl(s: string): number {
  const m = /^(\d+)([smhd]?)$/.exec(s);
  if (!m) throw new Error('--ttl must look like 90s, 15m, 1h or 7d');
  return Number(m[1]) * { '': 1, s: 1, m: 60, h: 3600, d: 86400 }[m[2] as '' | 's' | 'm' | 'h' | 'd'];
}

export const CLI_COMMANDS = ['token', 'healthcheck', 'image'];

export async function runCli(argv: string[]) {
  const [cmd, ...rest] = argv;
  if (cmd === 'token') {
    const { values } = parseArgs({ args: rest, options: { sub: { type: 'string' }, ttl: { type: 'string', default: '1h' }, role: { type: 'string' } } });
    if (!values.sub) throw new Error('--sub is required');
    if (values.role !== undefined && values.role !== 'admin') throw new Error('--role takes only admin');
    const config = loadConfig();
    process.stdout.write(mintToken(config.apiSecret, { sub: values.sub, ttlSeconds: parseTtl(values.ttl!), role: values.role as 'admin' | undefined }) + '\n');
    return;
  }
  if (cmd === 'healthcheck') {
    const config = loadConfig();
    const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
    for (const name of config.services) {
      const res = await fetch(`http://${host.includes(':') ? `[${host}]` : host}:${config.ports[name]}/health`, { signal: AbortSignal.timeout(2000) }).catch(() => null);
      if (res?.status !== 200) throw new Error(`${name} is not healthy`);
    }
    return;
  }
  if (cmd === 'image') {
    const name = rest[0];
    const { createTemplateRegistry } = await import('./services/workspaces/images/templates');
    const template = name ? createTemplateRegistry().get(name) : undefined;
    if (!template?.build) throw new Error('usage: keel image minimal|bun-typescript');
    const { createEngine } = await import('./services/workspaces/engine/docker');
    const { buildTemplateImage, templateImage } = await import('./services/workspaces/images/template-image');
    const { loadWorkspacesConfig } = await import('./services/workspaces/workspaces.config');
    const settings = loadWorkspacesConfig(process.env);
    const ref = templateImage(template, settings);
    // Progress to stderr only when asked (KEEL_VERBOSE), so stdout stays the one `built <tag>` line.
    const quiet = { info: (m: string) => process.env.KEEL_VERBOSE && process.stderr.write(`${m}\n`), warn: (m: string, f?: Record<string, unknown>) => process.stderr.write(`${m}: ${String(f?.reason ?? '')}\n`) };
    await buildTemplateImage(createEngine(process.env.DOCKER_HOST || undefined), template, ref, settings, quiet);
    process.stdout.write(`built ${ref}\n`);
    return;
  }
  process.stderr.write(USAGE + '\n');
  process.exit(cmd && cmd !== "help" ? 2 : 0);
}

if (import.meta.main) {
  runCli(process.argv.slice(2)).catch((e) => {
    process.stderr.write(`${(e as Error).message}\n`);
    process.exit(1);
  });
}
