// The workspaces service's own environment variables, parsed once (a bad value stops start-up naming it).
import { ConfigError, readBool, readDuration, readInt, readString, type Env } from '../../platform/config';
import { BUN_IMAGE, MINIMAL_IMAGE } from './images/minimal-image';
import { DEFAULT_TEMPLATES_DIR } from './images/bun-image';
import type { QuotaLimits } from './quotas';
import type { FirewallMode } from './network/firewall';
import { formatCidr, overlaps, parseCidr, SUBNET_PREFIX, type Cidr } from './network/subnets';

function readImageRef(env: Env, name: string, fallback: string): string {
  const v = readString(env, name, fallback);
  if (!/^[a-z0-9][a-z0-9._/-]*:[A-Za-z0-9._-]+$/.test(v)) throw new ConfigError(name, 'must be an image reference with a tag, e.g. keel/minimal:1');
  return v;
}

function readHttpUrl(env: Env, name: string, fallback: string): string {
  const v = readString(env, name, fallback);
  if (!/^https?:\/\/[^\s]+$/.test(v)) throw new ConfigError(name, 'must be an http(s) URL');
  return v;
}

function readAbsolutePath(env: Env, name: string, fallback: string): string {
  const v = readString(env, name, fallback);
  if (!v.startsWith('/')) throw new ConfigError(name, 'must be an absolute path');
  return v;
}

/** APP_PREVIEW_DOMAIN: a DNS name (letters, digits, hyphens, dots); previews are `<label>.<domain>`. */
function readPreviewDomain(env: Env): string {
  const v = readString(env, 'APP_PREVIEW_DOMAIN', 'localhost').toLowerCase();
  if (!/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/.test(v) || v.length > 200) {
    throw new ConfigError('APP_PREVIEW_DOMAIN', 'must be a DNS name such as localhost or preview.example.com');
  }
  return v;
}

/** APP_PREVIEW_PUBLIC_URL: an http(s) URL whose host holds `{label}` (https://{label}.preview.example.com); empty: none. */
function readPreviewPublicUrl(env: Env): string | undefined {
  const v = readString(env, 'APP_PREVIEW_PUBLIC_URL', '');
  if (!v) return undefined;
  // The root of a host only: an app loads its absolute paths (/assets/x.js) from there.
  const m = /^(https?):\/\/(\{label\}\.[A-Za-z0-9.-]+(?::\d{1,5})?)\/?$/.exec(v);
  if (!m) throw new ConfigError('APP_PREVIEW_PUBLIC_URL', 'must be an http(s) URL of a host starting with {label}. and no path, e.g. https://{label}.preview.example.com');
  return `${m[1]}://${m[2]!.toLowerCase()}/`;
}

function readPortRange(env: Env): [number, number] {
  const raw = readString(env, 'APP_WORKSPACE_PORT_RANGE', '20000-20999');
  const m = /^(\d+)-(\d+)$/.exec(raw);
  const lo = Number(m?.[1]);
  const hi = Number(m?.[2]);
  if (!m || lo < 1024 || hi > 65535 || lo > hi) {
    throw new ConfigError('APP_WORKSPACE_PORT_RANGE', 'must be LOW-HIGH within 1024-65535');
  }
  return [lo, hi];
}

export interface CloneSettings {
  /** APP_CLONE_DENY_PRIVATE: refuse loopback and private targets too (link-local and metadata always are). */
  denyPrivate: boolean;
  /** APP_CLONE_MAX_MB in bytes: a clone whose files on disk grow past it is aborted. */
  maxBytes: number;
  /** APP_CLONE_CONCURRENCY: clones running at once, for every actor together. */
  concurrency: number;
  /** APP_CLONE_QUEUE: clones waiting for a place; past it a create with a repo answers 503 with Retry-After. */
  maxWaiting: number;
  /** The PATH git is found and runs with: Keel's own PATH (its other variables never reach git). */
  searchPath: string;
}

function readFirewallMode(env: Env): FirewallMode {
  const v = readString(env, 'APP_WORKSPACE_FIREWALL', 'required');
  if (v !== 'required' && v !== 'off') throw new ConfigError('APP_WORKSPACE_FIREWALL', 'must be required or off');
  return v;
}

function readSubnetPool(env: Env): string {
  const pool = parseCidr(readString(env, 'APP_WORKSPACE_SUBNET_POOL', '10.213.0.0/16'));
  if (!pool || pool.prefix > SUBNET_PREFIX - 2) throw new ConfigError('APP_WORKSPACE_SUBNET_POOL', `must be an IPv4 CIDR of /${SUBNET_PREFIX - 2} or wider, e.g. 10.213.0.0/16`);
  return formatCidr(pool);
}

/** One Docker engine of APP_ENGINES (docs/workspaces.md, "Several engines"). */
export interface EngineSettings {
  /** The name workspaces record (`engine` in the admin's view). */
  name: string;
  /** unix:// socket or tcp:// address; undefined: Docker's default socket. */
  host: string | undefined;
  /** Directory of ca.pem, cert.pem and key.pem for a TLS tcp:// engine (DOCKER_CERT_PATH's layout). */
  certPath?: string;
  /** Network namespace (a path such as /run/netns/b) whose iptables hold the engine's bridges: Keel runs iptables there through nsenter. */
  netns?: string;
  /** Keel's firewall for this engine's workspace networks (`off`: the engine host's own job). */
  firewall: FirewallMode;
  /** The share of APP_WORKSPACE_SUBNET_POOL this engine's workspace networks are carved from. */
  pool: string;
}

/**
 * APP_ENGINES: `name=url[?certs=DIR&netns=NAME&firewall=off&pool=CIDR],...`. Unset: one engine named
 * `default` at DOCKER_HOST (TLS by DOCKER_CERT_PATH when DOCKER_TLS_VERIFY is set). Each engine gets
 * its own part of APP_WORKSPACE_SUBNET_POOL (the pool cut in equal power-of-two parts, in the order
 * named, or `pool=` inside it), so two engines on one host never hand out overlapping subnets.
 */
function readEngines(env: Env, subnetPool: string, firewall: FirewallMode): EngineSettings[] {
  const raw = readString(env, 'APP_ENGINES', '');
  const certPath = env.DOCKER_TLS_VERIFY && env.DOCKER_CERT_PATH ? env.DOCKER_CERT_PATH : undefined;
  if (!raw) return [{ name: 'default', host: env.DOCKER_HOST || undefined, certPath, firewall, pool: subnetPool }];
  const bad = (why: string) => new ConfigError('APP_ENGINES', why);
  const pool = parseCidr(subnetPool)!;
  const items = raw.split(',').map((s) => s.trim()).filter(Boolean);
  const bits = Math.ceil(Math.log2(items.length));
  if (pool.prefix + bits > SUBNET_PREFIX - 2) throw bad('too many engines for APP_WORKSPACE_SUBNET_POOL: widen the pool');
  const share = 2 ** (32 - pool.prefix - bits);
  const out: EngineSettings[] = items.map((item, i) => {
    const m = /^([a-z0-9][a-z0-9-]{0,31})=((?:unix|tcp|https?):\/\/[^?\s]+)(?:\?(\S*))?$/.exec(item);
    if (!m) throw bad('must be name=unix:///path.sock or name=tcp://host:port, comma separated (names: a-z, 0-9, -)');
    const opts = new URLSearchParams(m[3] ?? '');
    for (const k of opts.keys()) if (!['certs', 'netns', 'firewall', 'pool'].includes(k)) throw bad(`engine ${m[1]}: unknown option (certs, netns, firewall, pool)`);
    const mode = opts.get('firewall') ?? firewall;
    if (mode !== 'required' && mode !== 'off') throw bad(`engine ${m[1]}: firewall must be required or off`);
    const netns = opts.get('netns') || undefined;
    const own = opts.get('pool') ? parseCidr(opts.get('pool')!) : ({ base: pool.base + i * share, prefix: pool.prefix + bits } as Cidr);
    if (!own || own.prefix > SUBNET_PREFIX - 2 || own.prefix < pool.prefix || !overlaps(own, pool)) throw bad(`engine ${m[1]}: pool must be a CIDR inside APP_WORKSPACE_SUBNET_POOL, /${SUBNET_PREFIX - 2} or wider`);
    return {
      name: m[1]!,
      host: m[2]!.replace(/^https:/, 'tcp:'),
      certPath: opts.get('certs') || undefined,
      netns: netns && !netns.includes('/') ? `/run/netns/${netns}` : netns,
      firewall: mode,
      pool: formatCidr(own),
    };
  });
  for (const [i, e] of out.entries()) {
    if (out.findIndex((o) => o.name === e.name) !== i) throw bad(`engine name ${e.name} is given twice`);
    if (out.some((o, j) => j < i && overlaps(parseCidr(o.pool)!, parseCidr(e.pool)!))) throw bad(`the pools of engines ${e.name} and another overlap`);
  }
  return out;
}

/** Engine sizes as the engine writes them: a number and an optional k, m or g (e.g. 10m, 20g). */
/** `APP_WARM_POOL`: `template=count,...` (pool/pool.service.ts): a built-in's name or a public template's, looked up as the pool fills. */
function readWarmPool(env: Env): Record<string, number> {
  const raw = readString(env, 'APP_WARM_POOL', '').trim();
  const pool: Record<string, number> = {};
  if (!raw) return pool;
  for (const part of raw.split(',')) {
    const m = /^\s*([a-z0-9][a-z0-9._-]*)\s*=\s*(\d{1,3})\s*$/.exec(part);
    if (!m || Number(m[2]) > 100) throw new ConfigError('APP_WARM_POOL', 'must read template=count,... with counts 0-100 (e.g. minimal=4,bun-typescript=2)');
    pool[m[1]!] = Number(m[2]);
  }
  return pool;
}

function readEngineSize(env: Env, name: string, fallback: string): string {
  const v = readString(env, name, fallback).toLowerCase();
  if (v && !/^[1-9]\d{0,6}[kmg]?$/.test(v)) throw new ConfigError(name, 'must be a size such as 10m or 20g');
  return v;
}

export interface WorkspacesConfig {
  /** DOCKER_HOST (unix:// or tcp://); unset: the engine's default socket. */
  dockerHost: string | undefined;
  /** APP_ENGINES: the engines workspaces are placed on, in order; one (`default`, DOCKER_HOST) unless set. */
  engines: EngineSettings[];
  /** APP_ENGINE_CHECK_SECONDS: how often each engine is asked whether it answers (and Retry-After while it does not). */
  engineCheckSeconds: number;
  /** Host name in the URLs of a workspace's published ports. */
  publicHost: string;
  /** Host ports handed out to workspaces. */
  workspacePortRange: [number, number];
  anonymousLimit: number;
  authenticatedLimit: number;
  /** Host address the workspace ports are published on. */
  bindAddress: string;
  cloneTimeoutMs: number;
  /** Repo clones: target rules, size and concurrency caps (docs/security.md, "Clones"). */
  clone: CloneSettings;
  /** Per-actor quotas; admin tokens are exempt (docs/security.md, "Quotas"). */
  quotas: QuotaLimits;
  stopGraceSeconds: number;
  /** Default `autoStopMinutes` of a create that gives none (0: never); docs/workspaces.md says why 60. */
  autoStopMinutes: number;
  /** Warm containers kept per template (APP_WARM_POOL; pool/pool.service.ts); empty: no pool. */
  warmPool: Record<string, number>;
  /** Pool entries made at once while the pool refills (APP_WARM_POOL_CONCURRENCY). */
  warmPoolConcurrency: number;
  /** Snapshots an actor may hold (APP_QUOTA_SNAPSHOTS); admins are exempt. */
  snapshotQuota: number;
  /** Templates an actor may hold (APP_QUOTA_TEMPLATES), their build context's bound and a build's time limit. */
  /** Templates people bring: the quota per actor, a context's bound, a build's time limit, and the most `cpu` and `memoryMb` a template may give its workspaces. */
  templates: { quota: number; contextBytes: number; buildTimeoutMs: number; maxCpus: number; maxMemoryMb: number; builds: number };
  /** Tag of the offline-built minimal image (tests use their own tag). */
  minimalImage: string;
  /** Tag of the bun-typescript image Keel builds (tests use their own tag). */
  bunImage: string;
  /** Asked (any HTTP answer, short timeout) to decide between the Dockerfile and the offline build. */
  registryProbeUrl: string;
  /** The statically linked busybox the minimal image is made of. */
  busyboxPath: string;
  /** APP_BUN_PATH: the bun binary the offline bun-typescript image is made with; unset: npm's, found in node_modules. */
  bunPath: string | undefined;
  /** APP_TEMPLATES_DIR: the templates' files (a compiled Keel binary has none beside it); default: the checkout's. */
  templatesDir: string;
  /** `required`: Keel's iptables rules guard every workspace network, else no workspace is created; `off`: none (docs/security.md). */
  firewall: FirewallMode;
  /** IPv4 pool the per-workspace /28 networks are carved from. */
  subnetPool: string;
  /** json-file rotation of each container's log. */
  logMaxSize: string;
  logMaxFiles: number;
  /** Size cap of the volume and the container's writable layer (engine storage quotas); empty: none. */
  diskLimit: string;
  /**
   * What start-up prints on stdout: the engine line (`Engine: <host> (<origin>)`, not under
   * NODE_ENV=test) and, when the API secret was generated (dev), the admin token. APP_QUIET_TOKEN
   * (any value) silences both; KEEL_ENGINE_ORIGIN is where scripts/dev.ts found the engine.
   */
  announce: { engine: boolean; token: boolean; engineOrigin: string };
  /** APP_FILE_MAX_BYTES: the largest file an upload may write (PUT .../files); default 1 GiB. */
  fileMaxBytes: number;
  /**
   * APP_TOOL_READ_MAX_BYTES: the most of a file MCP read_file and the agent's read_file answer
   * (default 1 MiB; at most 8 MiB, so a read and its JSON stay within what a request may add to memory).
   */
  toolReadMaxBytes: number;
  /** APP_PREVIEW_PORT: the preview listener's port (0: any free one). */
  previewPort: number;
  /**
   * APP_WORKSPACE_DAEMON: keeld's binary (docs/computer.md#the-daemon): `auto` (the default) is the one
   * built into daemon/bin or carried by the compiled binary, `off` none (every process starts through
   * the engine's exec), else an absolute path.
   */
  daemon: 'auto' | 'off' | string;
  /** APP_PREVIEW_DOMAIN: previews are served at `http://<label>.<domain>:<previewPort>/` (default `localhost`). */
  previewDomain: string;
  /** APP_PREVIEW_PUBLIC_URL: the whole form of a preview's URL behind a TLS proxy, `{label}` in its host; replaces the one above. */
  previewPublicUrl?: string;
  /** APP_QUOTA_PROCESSES and APP_PROCESS_OUTPUT_BYTES (processes/). */
  processes: { quota: number; outputBytes: number };
}

export function loadWorkspacesConfig(env: Env = process.env): WorkspacesConfig {
  const bindAddress = readString(env, 'APP_WORKSPACE_BIND_ADDRESS', '127.0.0.1');
  if (!/^(\d{1,3}\.){3}\d{1,3}$/.test(bindAddress) && bindAddress !== '::1' && bindAddress !== '::') {
    throw new ConfigError('APP_WORKSPACE_BIND_ADDRESS', 'must be an IP address such as 127.0.0.1 or 0.0.0.0');
  }
  const subnetPool = readSubnetPool(env);
  const firewall = readFirewallMode(env);
  return {
    dockerHost: env.DOCKER_HOST || undefined,
    engines: readEngines(env, subnetPool, firewall),
    engineCheckSeconds: readInt(env, 'APP_ENGINE_CHECK_SECONDS', 5, 1, 300),
    publicHost: readString(env, 'APP_PUBLIC_HOST', 'localhost'),
    workspacePortRange: readPortRange(env),
    anonymousLimit: readInt(env, 'APP_RATE_LIMIT_ANONYMOUS', 100, 1, 1_000_000),
    authenticatedLimit: readInt(env, 'APP_RATE_LIMIT_AUTHENTICATED', 1000, 1, 1_000_000),
    bindAddress,
    cloneTimeoutMs: readInt(env, 'APP_WORKSPACE_CLONE_TIMEOUT', 120, 1, 3600) * 1000,
    clone: {
      denyPrivate: readBool(env, 'APP_CLONE_DENY_PRIVATE', false),
      maxBytes: readInt(env, 'APP_CLONE_MAX_MB', 1024, 1, 1_048_576) * 1024 * 1024,
      concurrency: readInt(env, 'APP_CLONE_CONCURRENCY', 4, 1, 64),
      maxWaiting: readInt(env, 'APP_CLONE_QUEUE', 16, 0, 10_000),
      searchPath: env.PATH || '/usr/bin:/bin',
    },
    quotas: {
      workspaces: readInt(env, 'APP_QUOTA_WORKSPACES', 20, 0, 1_000_000),
      running: readInt(env, 'APP_QUOTA_RUNNING', 10, 0, 1_000_000),
      execs: readInt(env, 'APP_QUOTA_EXECS', 8, 0, 1_000_000),
      streams: readInt(env, 'APP_QUOTA_STREAMS', 32, 0, 1_000_000),
      volumes: readInt(env, 'APP_QUOTA_VOLUMES', 20, 0, 1_000_000),
    },
    stopGraceSeconds: readInt(env, 'APP_WORKSPACE_STOP_GRACE', 10, 0, 300),
    autoStopMinutes: readInt(env, 'APP_AUTO_STOP_MINUTES', 60, 0, 525_600),
    warmPool: readWarmPool(env),
    warmPoolConcurrency: readInt(env, 'APP_WARM_POOL_CONCURRENCY', 2, 1, 16),
    snapshotQuota: readInt(env, 'APP_QUOTA_SNAPSHOTS', 20, 0, 1_000_000),
    templates: {
      quota: readInt(env, 'APP_QUOTA_TEMPLATES', 20, 0, 1_000_000),
      contextBytes: readInt(env, 'APP_TEMPLATE_CONTEXT_BYTES', 64 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
      buildTimeoutMs: readDuration(env, 'APP_TEMPLATE_BUILD_TIMEOUT', '30m', 1000),
      maxCpus: readInt(env, 'APP_TEMPLATE_MAX_CPUS', 4, 1, 1024),
      maxMemoryMb: readInt(env, 'APP_TEMPLATE_MAX_MEMORY_MB', 8192, 16, 16 * 1024 * 1024),
      builds: readInt(env, 'APP_TEMPLATE_BUILDS', 2, 1, 64),
    },
    minimalImage: readImageRef(env, 'APP_WORKSPACE_MINIMAL_IMAGE', MINIMAL_IMAGE),
    bunImage: readImageRef(env, 'APP_WORKSPACE_BUN_IMAGE', BUN_IMAGE),
    registryProbeUrl: readHttpUrl(env, 'APP_REGISTRY_PROBE_URL', 'https://registry-1.docker.io/v2/'),
    busyboxPath: readAbsolutePath(env, 'APP_BUSYBOX_PATH', '/bin/busybox'),
    bunPath: readString(env, 'APP_BUN_PATH', '') || undefined,
    templatesDir: readString(env, 'APP_TEMPLATES_DIR', DEFAULT_TEMPLATES_DIR),
    firewall,
    subnetPool,
    logMaxSize: readEngineSize(env, 'APP_WORKSPACE_LOG_MAX_SIZE', '10m') || '10m',
    logMaxFiles: readInt(env, 'APP_WORKSPACE_LOG_MAX_FILES', 3, 1, 100),
    diskLimit: readEngineSize(env, 'APP_WORKSPACE_DISK_LIMIT', ''),
    fileMaxBytes: readInt(env, 'APP_FILE_MAX_BYTES', 1024 * 1024 * 1024, 1, Number.MAX_SAFE_INTEGER),
    toolReadMaxBytes: readInt(env, 'APP_TOOL_READ_MAX_BYTES', 1024 * 1024, 1, 8 * 1024 * 1024),
    previewPort: readInt(env, 'APP_PREVIEW_PORT', 3105, 0, 65535),
    daemon: ['auto', 'off'].includes(readString(env, 'APP_WORKSPACE_DAEMON', 'auto')) ? readString(env, 'APP_WORKSPACE_DAEMON', 'auto') : readAbsolutePath(env, 'APP_WORKSPACE_DAEMON', ''),
    previewDomain: readPreviewDomain(env),
    previewPublicUrl: readPreviewPublicUrl(env),
    processes: {
      quota: readInt(env, 'APP_QUOTA_PROCESSES', 16, 0, 1_000_000),
      outputBytes: readInt(env, 'APP_PROCESS_OUTPUT_BYTES', 1024 * 1024, 1024, 64 * 1024 * 1024),
    },
    announce: {
      engine: !env.APP_QUIET_TOKEN && env.NODE_ENV !== 'test',
      token: !env.APP_QUIET_TOKEN,
      engineOrigin: env.KEEL_ENGINE_ORIGIN || (env.DOCKER_HOST ? 'DOCKER_HOST' : "Docker's default socket"),
    },
  };
}
