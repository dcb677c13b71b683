// The `keel` command line on the SDK: `keel login` and `keel ws list|create|exec|logs|shell|cp|
// preview|delete`. Settings: KEEL_URL / KEEL_TOKEN, else what `keel login` stored in the user's
// config dir (<config>/keel/config.json, mode 0600). Exit codes: 0 done, 1 a failure (the API's
// error on stderr), 2 a wrong command line (with its usage); `ws exec` exits with the command's code.
// Node (>= 20) and Bun; the package's bin is dist/bin.js, a checkout runs it as `bun src/cli.ts ws ...`.
import { chmodSync, createReadStream, createWriteStream, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { KeelError } from './errors.js';
import { Keel, type Workspace } from './keel.js';

export class UsageError extends Error {}

const USAGE: Record<string, string> = {
  main: `usage: keel <command> [options]

  keel login [--url URL] [--token TOKEN]     store the URL and token (default: KEEL_URL, KEEL_TOKEN)
  keel ws list [--json]                      your workspaces
  keel ws create --name N [--template T] [--json]   create one; waits until it runs
  keel ws exec ID [--cwd DIR] [--timeout MS] -- CMD ARGS...   run a command; exits with its code
  keel ws logs ID [-f] [--tail N]            its logs (-f: follow)
  keel ws shell ID                           a terminal in it on this TTY
  keel ws cp SRC DST                         copy a file in or out (ID:PATH on one side)
  keel ws preview ID PORT [--ttl S] [--json] a link to a port of it
  keel ws delete ID [--volumes] [--json]     delete it

Every command takes --help. Settings: KEEL_URL and KEEL_TOKEN, else those stored by keel login.`,
  login: 'usage: keel login [--url URL] [--token TOKEN]\n  Stores the URL and token in <config dir>/keel/config.json (mode 0600). Without --token, reads it from stdin.',
  list: 'usage: keel ws list [--json]\n  Your workspaces: id, name, status, template (--json: the API\'s JSON).',
  create: 'usage: keel ws create --name NAME [--template TEMPLATE] [--type persistent|ephemeral] [--no-wait] [--json]\n  Creates a workspace and waits until it runs; prints its id (--json: the API\'s JSON).',
  exec: 'usage: keel ws exec ID [--cwd DIR] [--timeout MS] [--env NAME=VALUE]... -- CMD ARGS...\n  Runs the command in the workspace, its output streamed here; exits with its exit code.',
  logs: 'usage: keel ws logs ID [-f|--follow] [--tail N] [--service S] [--json]\n  The workspace\'s log lines; -f follows them until interrupted.',
  shell: 'usage: keel ws shell ID [--command CMD]\n  Attaches a terminal of the workspace to this TTY (raw mode; resized with the window). Exit the shell to leave.',
  cp: 'usage: keel ws cp SRC DST\n  ID:PATH on one side, a local file (or - for stdin/stdout) on the other: keel ws cp app.tar ws_1:/workspace/app.tar',
  preview: 'usage: keel ws preview ID PORT [--ttl SECONDS] [--json]\n  A preview link to PORT of the workspace; prints its URL.',
  delete: 'usage: keel ws delete ID [--volumes] [--json]\n  Deletes the workspace (--volumes: its volumes too).',
};

export interface CliIo {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  env: Record<string, string | undefined>;
}

const defaultIo = (): CliIo => ({ stdout: process.stdout, stderr: process.stderr, env: process.env });

/** The config file `keel login` writes: $XDG_CONFIG_HOME/keel/config.json (~/.config, %APPDATA% on Windows). */
export function configPath(env: Record<string, string | undefined> = process.env): string {
  const base = env.XDG_CONFIG_HOME || (process.platform === 'win32' && env.APPDATA) || join(env.HOME || homedir(), '.config');
  return join(base, 'keel', 'config.json');
}

function loadSettings(env: Record<string, string | undefined>): { url?: string; token?: string } {
  let stored: { url?: string; token?: string } = {};
  try {
    stored = JSON.parse(readFileSync(configPath(env), 'utf8'));
  } catch {
    // No login yet.
  }
  return { url: env.KEEL_URL || stored.url, token: env.KEEL_TOKEN || stored.token };
}

/** Flags and positionals of a command line; `--` ends the flags (what follows is `rest`). */
function parse(args: string[], spec: { bool?: string[]; value?: string[]; multi?: string[] }) {
  const flags: Record<string, string | boolean | string[]> = {};
  const positionals: string[] = [];
  let rest: string[] | undefined;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--') {
      rest = args.slice(i + 1);
      break;
    }
    if (a.startsWith('-') && a !== '-') {
      const [name, inline] = a.includes('=') && a.startsWith('--') ? [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] : [a, undefined];
      const key = name.replace(/^-+/, '');
      if (spec.bool?.includes(key) || key === 'help' || key === 'h') flags[key === 'h' ? 'help' : key] = true;
      else if (spec.value?.includes(key) || spec.multi?.includes(key)) {
        const v = inline ?? args[++i];
        if (v === undefined) throw new UsageError(`${name} needs a value`);
        if (spec.multi?.includes(key)) ((flags[key] ??= []) as string[]).push(v);
        else flags[key] = v;
      } else throw new UsageError(`unknown option ${JSON.stringify(name.slice(0, 40))}`);
    } else positionals.push(a);
  }
  return { flags, positionals, rest };
}

const shellQuote = (s: string) => (/^[A-Za-z0-9_\/.,:=@%+-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);
const json = (io: CliIo, v: unknown) => io.stdout.write(JSON.stringify(v, null, 2) + '\n');

/** Runs `keel login ...` or `keel ws ...`; resolves with the exit code. Throws UsageError or KeelError. */
export async function runKeelCli(argv: string[], io: CliIo = defaultIo()): Promise<number> {
  const [cmd, ...rest] = argv;
  if (cmd === undefined || cmd === '--help' || cmd === '-h' || cmd === 'help') {
    io.stdout.write(USAGE.main + '\n');
    return cmd === undefined ? 2 : 0;
  }
  if (cmd === 'login') return login(rest, io);
  if (cmd !== 'ws') throw new UsageError(`unknown command ${JSON.stringify(cmd.slice(0, 40))}`);
  const [verb, ...args] = rest;
  if (verb === undefined || verb === '--help' || verb === '-h') {
    io.stdout.write(USAGE.main + '\n');
    return verb === undefined ? 2 : 0;
  }
  const usage = USAGE[verb];
  if (!usage || verb === 'main' || verb === 'login') throw new UsageError(`unknown command ws ${JSON.stringify(verb.slice(0, 40))}`);
  if (args.includes('--help') || args.includes('-h')) {
    const dashdash = args.indexOf('--');
    const help = args.findIndex((a) => a === '--help' || a === '-h');
    if (dashdash < 0 || help < dashdash) {
      io.stdout.write(usage + '\n');
      return 0;
    }
  }
  const keel = new Keel(loadSettings(io.env));
  try {
    switch (verb) {
      case 'list':
        return await list(keel, args, io);
      case 'create':
        return await create(keel, args, io);
      case 'exec':
        return await exec(keel, args, io);
      case 'logs':
        return await logs(keel, args, io);
      case 'shell':
        return await shell(keel, args);
      case 'cp':
        return await cp(keel, args, io);
      case 'preview':
        return await preview(keel, args, io);
      case 'delete':
        return await del(keel, args, io);
    }
  } catch (e) {
    if (e instanceof UsageError) throw new UsageError(`${e.message}\n${usage}`);
    throw e;
  }
  return 2;
}

function one(positionals: string[], what: string, n = 1): string[] {
  if (positionals.length !== n) throw new UsageError(`${what} expected`);
  return positionals;
}

async function login(args: string[], io: CliIo): Promise<number> {
  const { flags, positionals } = parse(args, { value: ['url', 'token'] });
  if (flags.help) return void io.stdout.write(USAGE.login + '\n'), 0;
  if (positionals.length) throw new UsageError(`login takes no arguments\n${USAGE.login}`);
  const url = (flags.url as string | undefined) ?? io.env.KEEL_URL;
  let token = (flags.token as string | undefined) ?? io.env.KEEL_TOKEN;
  if (!url) throw new UsageError(`--url (or KEEL_URL) is required\n${USAGE.login}`);
  if (!token) {
    const chunks: Buffer[] = [];
    for await (const c of process.stdin) chunks.push(c as Buffer);
    token = Buffer.concat(chunks).toString('utf8').trim();
  }
  if (!token) throw new UsageError(`a token is required (--token, KEEL_TOKEN or stdin)\n${USAGE.login}`);
  // Checked before it is kept: a wrong URL or token fails here, not at the next command.
  await new Keel({ url, token }).workspaces.list();
  const file = configPath(io.env);
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  writeFileSync(file, JSON.stringify({ url, token }, null, 2) + '\n', { mode: 0o600 });
  chmodSync(file, 0o600);
  io.stdout.write(`logged in to ${url}; settings in ${file}\n`);
  return 0;
}

async function list(keel: Keel, args: string[], io: CliIo): Promise<number> {
  const { flags, positionals } = parse(args, { bool: ['json'] });
  one(positionals, 'no arguments', 0);
  const all = await keel.workspaces.list();
  if (flags.json) json(io, { workspaces: all.map((w) => w.toJSON()) });
  else {
    const rows = [['ID', 'NAME', 'STATUS', 'TEMPLATE'], ...all.map((w) => [w.id, w.name, w.status, w.template])];
    const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => String(r[i] ?? '').length)));
    for (const r of rows) io.stdout.write(r.map((c, i) => String(c ?? '').padEnd(widths[i]!)).join('  ').trimEnd() + '\n');
  }
  return 0;
}

async function create(keel: Keel, args: string[], io: CliIo): Promise<number> {
  const { flags, positionals } = parse(args, { bool: ['json', 'no-wait'], value: ['name', 'template', 'type', 'timeout'] });
  one(positionals, 'no arguments', 0);
  if (!flags.name) throw new UsageError('--name is required');
  const body: Record<string, unknown> = { name: flags.name };
  if (flags.template) body.template = flags.template;
  if (flags.type) body.type = flags.type;
  const ws = await keel.workspaces.create(body as never, { wait: !flags['no-wait'], ...(flags.timeout ? { timeoutMs: Number(flags.timeout) } : {}) });
  if (flags.json) json(io, ws.toJSON());
  else io.stdout.write(ws.id + '\n');
  return 0;
}

async function exec(keel: Keel, args: string[], io: CliIo): Promise<number> {
  const { flags, positionals, rest } = parse(args, { value: ['cwd', 'timeout'], multi: ['env'] });
  const [id] = one(positionals, 'a workspace ID');
  if (!rest?.length) throw new UsageError('a command after -- is required');
  const env: Record<string, string> = {};
  for (const kv of (flags.env as string[] | undefined) ?? []) {
    const eq = kv.indexOf('=');
    if (eq < 1) throw new UsageError('--env takes NAME=VALUE');
    env[kv.slice(0, eq)] = kv.slice(eq + 1);
  }
  const ws = await keel.workspaces.get(id!);
  const command = rest.length === 1 ? rest[0]! : rest.map(shellQuote).join(' ');
  const r = await ws.commands.run(command, {
    onStdout: (t) => io.stdout.write(t),
    onStderr: (t) => io.stderr.write(t),
    ...(flags.cwd ? { cwd: flags.cwd as string } : {}),
    ...(flags.timeout ? { timeoutMs: Number(flags.timeout) } : {}),
    ...(Object.keys(env).length ? { env } : {}),
  });
  return r.exitCode;
}

async function logs(keel: Keel, args: string[], io: CliIo): Promise<number> {
  const { flags, positionals } = parse(args, { bool: ['f', 'follow', 'json'], value: ['tail', 'service'] });
  const [id] = one(positionals, 'a workspace ID');
  const ws = await keel.workspaces.get(id!);
  const opts = { ...(flags.tail ? { tail: Number(flags.tail) } : {}), ...(flags.service ? { service: flags.service as string } : {}) };
  const line = (e: { timestamp: string; service?: string; message: string }) =>
    io.stdout.write(flags.json ? JSON.stringify(e) + '\n' : `${e.timestamp} ${e.service ?? ''} ${e.message}\n`);
  if (flags.f || flags.follow) for await (const e of ws.followLogs(opts)) line(e);
  else for (const e of await ws.logs(opts)) line(e);
  return 0;
}

async function shell(keel: Keel, args: string[]): Promise<number> {
  const { flags, positionals } = parse(args, { value: ['command'] });
  const [id] = one(positionals, 'a workspace ID');
  const ws = await keel.workspaces.get(id!);
  const stdin = process.stdin;
  const out = process.stdout;
  const term = await ws.terminal.open({
    cols: out.columns || 80,
    rows: out.rows || 24,
    ...(flags.command ? { command: flags.command as string } : {}),
    onData: (d) => out.write(d),
  });
  const wasRaw = stdin.isTTY ? stdin.isRaw : false;
  if (stdin.isTTY) stdin.setRawMode(true);
  const onInput = (d: Buffer) => term.write(new Uint8Array(d));
  const onResize = () => term.resize(out.columns || 80, out.rows || 24);
  stdin.on('data', onInput);
  stdin.resume();
  out.on('resize', onResize);
  await term.closed;
  stdin.off('data', onInput);
  out.off('resize', onResize);
  if (stdin.isTTY) stdin.setRawMode(wasRaw);
  stdin.pause();
  return 0;
}

async function cp(keel: Keel, args: string[], io: CliIo): Promise<number> {
  const { positionals } = parse(args, {});
  const [src, dst] = one(positionals, 'SRC and DST', 2) as [string, string];
  const remote = (s: string) => /^(ws_[^:\/]+):(.+)$/.exec(s);
  const from = remote(src);
  const to = remote(dst);
  if (!!from === !!to) throw new UsageError('exactly one of SRC and DST is ID:PATH');
  if (to) {
    const ws = await keel.workspaces.get(to[1]!);
    let target = to[2]!;
    if (target.endsWith('/')) target += basename(src);
    const stream = src === '-' ? process.stdin : (statSync(src), createReadStream(src));
    const r = await ws.files.write(target, Readable.toWeb(stream) as unknown as ReadableStream<Uint8Array>);
    io.stderr.write(`${r.path}: ${r.size} bytes\n`);
  } else {
    const ws = await keel.workspaces.get(from![1]!);
    const body = await ws.files.readStream(from![2]!);
    const sink = dst === '-' ? io.stdout : createWriteStream(dst.endsWith('/') ? join(dst, basename(from![2]!)) : dst);
    await body.pipeTo(Writable.toWeb(sink as Writable));
  }
  return 0;
}

async function preview(keel: Keel, args: string[], io: CliIo): Promise<number> {
  const { flags, positionals } = parse(args, { bool: ['json'], value: ['ttl'] });
  const [id, port] = one(positionals, 'a workspace ID and a PORT', 2);
  if (!/^\d+$/.test(port!)) throw new UsageError('PORT is a number');
  const ws = await keel.workspaces.get(id!);
  const p = await ws.previews.create(Number(port), flags.ttl ? { ttlSeconds: Number(flags.ttl) } : {});
  if (flags.json) json(io, p);
  else io.stdout.write(p.url + '\n');
  return 0;
}

async function del(keel: Keel, args: string[], io: CliIo): Promise<number> {
  const { flags, positionals } = parse(args, { bool: ['json', 'volumes'] });
  const [id] = one(positionals, 'a workspace ID');
  const ws: Pick<Workspace, 'delete'> = await keel.workspaces.get(id!);
  const r = await ws.delete({ volumes: !!flags.volumes });
  if (flags.json) json(io, r);
  else io.stdout.write(`${r.id} deleted\n`);
  return 0;
}

/** The exit code and message of a failure: 2 with the usage for a wrong command line, 1 otherwise. */
export function reportFailure(e: unknown, io: Pick<CliIo, 'stderr'> = defaultIo()): number {
  if (e instanceof UsageError) {
    io.stderr.write(`keel: ${e.message}\n`);
    return 2;
  }
  if (e instanceof KeelError) {
    io.stderr.write(`keel: ${e.message} (${e.code}${e.status ? `, HTTP ${e.status}` : ''})\n`);
    return 1;
  }
  io.stderr.write(`keel: ${(e as Error)?.message ?? String(e)}\n`);
  return 1;
}

/** The bin: runs the command line and exits with its code. */
export async function main(argv = process.argv.slice(2)): Promise<never> {
  let code: number;
  try {
    code = await runKeelCli(argv);
  } catch (e) {
    code = reportFailure(e);
  }
  // Let stdout drain before exiting (a pipe may still hold what was written).
  await new Promise<void>((r) => (process.stdout.writableLength ? process.stdout.once('drain', () => r()) : r()));
  process.exit(code);
}
