// The workspaces service's own environment variables, parsed once (a bad value stops start-up naming it).
import { ConfigError, readBool, readInt, readString, type Env } from '../../platform/config';
import { BUN_IMAGE, MINIMAL_IMAGE } from './images/minimal-image';
import { DEFAULT_TEMPLATES_DIR } from './images/bun-image';
import type { QuotaLimits } from './quotas';
import type { FirewallMode } from './network/firewall';
import { formatCidr, parseCidr, SUBNET_PREFIX } from './network/subnets';

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

/** Engine sizes as the engine writes them: a number and an optional k, m or g (e.g. 10m, 20g). */
function readEngineSize(env: Env, name: string, fallback: string): string {
  const v = readString(env, name, fallback).toLowerCase();
  if (v && !/^[1-9]\d{0,6}[kmg]?$/.test(v)) throw new ConfigError(name, 'must be a size such as 10m or 20g');
  return v;
}

export interface WorkspacesConfig {
  /** DOCKER_HOST (unix:// or tcp://); unset: the engine's default socket. */
  dockerHost: string | undefined;
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
  /** APP_PREVIEW_PORT: the preview listener's port (0: any free one). */
  previewPort: number;
  /** APP_QUOTA_PROCESSES and APP_PROCESS_OUTPUT_BYTES (processes/). */
  processes: { quota: number; outputBytes: number };
}

export function loadWorkspacesConfig(env: Env = process.env): WorkspacesConfig {
  const bindAddress = readString(env, 'APP_WORKSPACE_BIND_ADDRESS', '127.0.0.1');
  if (!/^(\d{1,3}\.){3}\d{1,3}$/.test(bindAddress) && bindAddress !== '::1' && bindAddress !== '::') {
    throw new ConfigError('APP_WORKSPACE_BIND_ADDRESS', 'must be an IP address such as 127.0.0.1 or 0.0.0.0');
  }
  return {
    dockerHost: env.DOCKER_HOST || undefined,
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
    minimalImage: readImageRef(env, 'APP_WORKSPACE_MINIMAL_IMAGE', MINIMAL_IMAGE),
    bunImage: readImageRef(env, 'APP_WORKSPACE_BUN_IMAGE', BUN_IMAGE),
    registryProbeUrl: readHttpUrl(env, 'APP_REGISTRY_PROBE_URL', 'https://registry-1.docker.io/v2/'),
    busyboxPath: readAbsolutePath(env, 'APP_BUSYBOX_PATH', '/bin/busybox'),
    bunPath: readString(env, 'APP_BUN_PATH', '') || undefined,
    templatesDir: readString(env, 'APP_TEMPLATES_DIR', DEFAULT_TEMPLATES_DIR),
    firewall: readFirewallMode(env),
    subnetPool: readSubnetPool(env),
    logMaxSize: readEngineSize(env, 'APP_WORKSPACE_LOG_MAX_SIZE', '10m') || '10m',
    logMaxFiles: readInt(env, 'APP_WORKSPACE_LOG_MAX_FILES', 3, 1, 100),
    diskLimit: readEngineSize(env, 'APP_WORKSPACE_DISK_LIMIT', ''),
    fileMaxBytes: readInt(env, 'APP_FILE_MAX_BYTES', 1024 * 1024 * 1024, 1, Number.MAX_SAFE_INTEGER),
    previewPort: readInt(env, 'APP_PREVIEW_PORT', 3105, 0, 65535),
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
