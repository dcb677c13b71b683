// The ergonomic layer of @keel/sdk (CONTRACT.md, "The SDK and the CLI"): Keel, its workspaces with
// commands, files, processes, previews, terminals and lifecycle calls, and agent sessions whose
// `send` is an async iterable of events that resumes after a dropped connection. fetch,
// ReadableStream and (for terminals) WebSocket only: Node >= 20, Bun and browsers alike.
import { KeelError } from './errors.js';
import { Media, type MediaOptions } from './media.js';
import { readEvents, type SseEvent } from './sse.js';
import type { components } from './generated/workspaces.js';

type Schemas = components['schemas'];
export type WorkspaceData = Schemas['Workspace'];
export type WorkspaceStatus = WorkspaceData['status'];
export type CreateWorkspaceBody = Schemas['CreateWorkspaceBody'];
export type ProcessView = Schemas['ProcessView'];
export type Snapshot = Schemas['Snapshot'];
export type LogEntry = Schemas['LogEntry'];

export interface KeelOptions {
  /** The workspace API's base URL (`http://127.0.0.1:3100`); default `KEEL_URL`. */
  url?: string;
  /** A workspace-API token (or a media access token); default `KEEL_TOKEN`. */
  token?: string;
  /** A fetch of your own (proxies, tests); the global one by default. */
  fetch?: typeof fetch;
  /** The media services (catalog, library, playback) and their credential (an API key or an access token). */
  media?: MediaOptions;
}

interface RequestOptions {
  json?: unknown;
  body?: BodyInit | null;
  query?: Record<string, string | number | boolean | undefined>;
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

const env = (name: string): string | undefined => (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env?.[name];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The HTTP side: base URL, Bearer token, errors as KeelError. */
export class Http {
  readonly url: string;
  readonly token: string | undefined;
  private readonly fetchFn: typeof fetch;
  constructor(opts: KeelOptions = {}) {
    const url = opts.url ?? env('KEEL_URL') ?? 'http://127.0.0.1:3100';
    this.url = url.replace(/\/+$/, '');
    this.token = opts.token ?? env('KEEL_TOKEN');
    this.fetchFn = opts.fetch ?? (((...a: Parameters<typeof fetch>) => fetch(...a)) as typeof fetch);
  }

  /** The answer of a call; a status outside 2xx throws KeelError. */
  async request(method: string, path: string, o: RequestOptions = {}): Promise<Response> {
    const u = new URL(this.url + path);
    for (const [k, v] of Object.entries(o.query ?? {})) if (v !== undefined) u.searchParams.set(k, String(v));
    const headers: Record<string, string> = { ...(o.headers ?? {}) };
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    let body = o.body;
    if (o.json !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(o.json);
    }
    const init: RequestInit & { duplex?: 'half' } = { method, headers, body: body ?? null, signal: o.signal };
    if (body instanceof ReadableStream) init.duplex = 'half';
    let res: Response;
    try {
      res = await this.fetchFn(u, init);
    } catch (err) {
      if (o.signal?.aborted) throw err;
      throw new KeelError(0, 'NETWORK_ERROR', `could not reach Keel at ${this.url}: ${(err as Error).message}`);
    }
    if (!res.ok) throw await KeelError.fromResponse(res);
    return res;
  }

  async json<T>(method: string, path: string, o: RequestOptions = {}): Promise<T> {
    return (await (await this.request(method, path, o)).json()) as T;
  }
}

/** The client: `new Keel({url, token})`, then `keel.workspaces` and `keel.agent`. */
export class Keel {
  readonly http: Http;
  readonly workspaces: Workspaces;
  readonly agent: { sessions: AgentSessions };
  readonly snapshots: Snapshots;
  readonly #opts: KeelOptions;
  #media: Media | undefined;
  constructor(opts: KeelOptions = {}) {
    this.#opts = opts;
    this.http = new Http(opts);
    this.workspaces = new Workspaces(this.http);
    this.agent = { sessions: new AgentSessions(this.http) };
    this.snapshots = new Snapshots(this.http);
  }
  /** Media: `keel.media.catalog.scan()`, `keel.media.library.scan().wait()`, `keel.media.playback.session()`. */
  get media(): Media {
    return (this.#media ??= new Media(this.http.url, this.#opts.media, this.#opts.fetch));
  }
}

export class Workspaces {
  constructor(private readonly http: Http) {}

  /**
   * Creates a workspace and resolves once it is `running` (polling, at most `timeoutMs`, default 5
   * minutes). A workspace that ends `failed` rejects with KeelError `WORKSPACE_FAILED` and its reason.
   * `wait: false` resolves at once with the workspace as created (`creating`).
   */
  async create(body: CreateWorkspaceBody, opts: { wait?: boolean; timeoutMs?: number } = {}): Promise<Workspace> {
    const created = await this.http.json<WorkspaceData>('POST', '/api/workspaces', { json: body });
    const ws = new Workspace(this.http, created);
    if (opts.wait === false) return ws;
    await ws.waitUntil('running', opts.timeoutMs);
    return ws;
  }

  async get(id: string): Promise<Workspace> {
    return new Workspace(this.http, await this.http.json<WorkspaceData>('GET', `/api/workspaces/${encodeURIComponent(id)}`));
  }

  /** Your workspaces (an admin token: all), oldest first; `status` and `type` filter. */
  async list(query: { status?: string; type?: string } = {}): Promise<Workspace[]> {
    const { workspaces } = await this.http.json<{ workspaces: WorkspaceData[] }>('GET', '/api/workspaces', { query });
    return workspaces.map((w) => new Workspace(this.http, w));
  }
}

/** Snapshots (`ws.snapshot(name)` takes one; `keel.workspaces.create({..., snapshot: id})` starts from one). */
export class Snapshots {
  constructor(private readonly http: Http) {}
  async list(): Promise<Snapshot[]> {
    return (await this.http.json<{ snapshots: Snapshot[] }>('GET', '/api/snapshots')).snapshots;
  }
  get(id: string): Promise<Snapshot> {
    return this.http.json('GET', `/api/snapshots/${encodeURIComponent(id)}`);
  }
  delete(id: string): Promise<{ id: string; deleted: boolean }> {
    return this.http.json('DELETE', `/api/snapshots/${encodeURIComponent(id)}`);
  }
}

export interface CommandOptions {
  /** Called with decoded text as the command writes it. */
  onStdout?: (text: string) => void;
  onStderr?: (text: string) => void;
  /** Killed (with everything it started) past it: exitCode 124, timedOut true. Keel's default 30 s. */
  timeoutMs?: number;
  /** The working directory (absolute). */
  cwd?: string;
  env?: Record<string, string>;
  /** Aborting kills the command. */
  signal?: AbortSignal;
}

export interface CommandResult {
  exitCode: number;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  /** Milliseconds. */
  duration: number;
}

export interface FileEntry {
  name: string;
  type: 'file' | 'directory' | 'symlink' | 'other' | string;
  size: number;
  mode: string;
  modifiedAt: string;
}

/** A workspace: the API's fields (id, name, status, template...) and what can be done with it. */
export interface Workspace extends WorkspaceData {}
export class Workspace {
  readonly commands: Commands;
  readonly files: Files;
  readonly processes: Processes;
  readonly previews: Previews;
  readonly terminal: Terminals;
  readonly #http: Http;

  constructor(http: Http, data: WorkspaceData) {
    this.#http = http;
    Object.assign(this, data);
    const base = `/api/workspaces/${encodeURIComponent(data.id)}`;
    this.commands = new Commands(http, base);
    this.files = new Files(http, base);
    this.processes = new Processes(http, base);
    this.previews = new Previews(http, base);
    this.terminal = new Terminals(http, base);
  }

  private get base() {
    return `/api/workspaces/${encodeURIComponent(this.id)}`;
  }

  /** The API's fields only (what `--json` prints). */
  toJSON(): WorkspaceData {
    const { commands: _c, files: _f, processes: _p, previews: _v, terminal: _t, ...data } = this as unknown as Record<string, unknown>;
    return data as unknown as WorkspaceData;
  }

  /** Reads the workspace again and updates these fields. */
  async refresh(): Promise<this> {
    Object.assign(this, await this.#http.json<WorkspaceData>('GET', this.base));
    return this;
  }

  /** Polls until `status`; `failed` (when waiting for another status) throws WORKSPACE_FAILED. */
  async waitUntil(status: WorkspaceStatus, timeoutMs = 300_000): Promise<this> {
    const until = Date.now() + timeoutMs;
    for (let delay = 100; ; delay = Math.min(delay * 1.5, 1000)) {
      await this.refresh();
      if (this.status === status) return this;
      if (this.status === 'failed') {
        const reason = (this as { reason?: string }).reason ?? 'the workspace failed';
        throw new KeelError(0, 'WORKSPACE_FAILED', reason, { id: this.id, reason });
      }
      if (Date.now() > until) throw new KeelError(0, 'TIMEOUT', `workspace ${this.id} is ${this.status}, not ${status}, after ${timeoutMs} ms`, { id: this.id, status: this.status });
      await sleep(delay);
    }
  }

  async pause(): Promise<this> {
    await this.#http.json('POST', `${this.base}/pause`);
    return this.refresh();
  }
  async resume(): Promise<this> {
    await this.#http.json('POST', `${this.base}/resume`);
    return this.refresh();
  }
  async start(): Promise<this> {
    await this.#http.json('POST', `${this.base}/start`);
    return this.waitUntil('running');
  }
  async stop(opts: { force?: boolean } = {}): Promise<this> {
    await this.#http.json('POST', `${this.base}/stop`, { query: { force: opts.force || undefined } });
    return this.refresh();
  }
  /** A snapshot of the workspace (its files and image), to create workspaces from. */
  snapshot(name: string): Promise<Snapshot> {
    return this.#http.json<Snapshot>('POST', `${this.base}/snapshots`, { json: { name } });
  }
  /** One snapshot named `name`, then `count` workspaces `<name>-1`... from it (as created, not waited for). */
  async fork(name: string, count = 1): Promise<Workspace[]> {
    const { workspaces } = await this.#http.json<{ workspaces: WorkspaceData[] }>('POST', `${this.base}/fork`, { json: { name, count } });
    return workspaces.map((w) => new Workspace(this.#http, w));
  }
  /** Deletes the workspace (`volumes: true`: its volumes too). */
  async delete(opts: { volumes?: boolean } = {}): Promise<{ id: string; deleted: boolean }> {
    return this.#http.json('DELETE', this.base, { query: { volumes: opts.volumes || undefined } });
  }

  /** The last log entries (`tail`, `service`), or with `follow: true` an endless iterable of them. */
  async logs(opts: { tail?: number; service?: string } = {}): Promise<LogEntry[]> {
    const { logs } = await this.#http.json<{ logs: LogEntry[] }>('GET', `${this.base}/logs`, { query: opts });
    return logs;
  }
  async *followLogs(opts: { tail?: number; service?: string; signal?: AbortSignal } = {}): AsyncGenerator<LogEntry> {
    const res = await this.#http.request('GET', `${this.base}/logs`, { query: { tail: opts.tail, service: opts.service, follow: true }, signal: opts.signal });
    for await (const e of readEvents(res)) {
      if (e.event === 'error') throw KeelError.fromBody(0, e.data) ?? new KeelError(0, 'STREAM_ERROR', 'the log stream failed');
      if (e.event === 'log' || e.event === 'message') yield e.data as LogEntry;
    }
  }
}

export class Commands {
  constructor(
    private readonly http: Http,
    private readonly base: string,
  ) {}

  /** Runs `command` (by `sh -c`) and resolves with its exit code and output; a non-zero exit resolves too. */
  async run(command: string, o: CommandOptions = {}): Promise<CommandResult> {
    const body: Record<string, unknown> = { command, stream: true };
    if (o.timeoutMs !== undefined) body.timeout = o.timeoutMs;
    if (o.cwd !== undefined) body.workdir = o.cwd;
    if (o.env !== undefined) body.env = o.env;
    const res = await this.http.request('POST', `${this.base}/exec`, { json: body, signal: o.signal });
    let stdout = '';
    let stderr = '';
    try {
      for await (const e of readEvents<SseEvent<any>>(res)) {
        if (e.event === 'stdout') {
          stdout += e.data.data;
          o.onStdout?.(e.data.data);
        } else if (e.event === 'stderr') {
          stderr += e.data.data;
          o.onStderr?.(e.data.data);
        } else if (e.event === 'exit') {
          return { exitCode: e.data.exitCode, stdout, stderr, timedOut: !!e.data.timedOut, duration: e.data.duration ?? 0 };
        } else if (e.event === 'error') {
          throw KeelError.fromBody(0, e.data) ?? new KeelError(0, 'STREAM_ERROR', 'the command failed');
        }
      }
    } catch (err) {
      if (err instanceof KeelError || o.signal?.aborted) throw err;
      // The connection broke, and with it the command (Keel kills an exec whose client is gone).
      throw new KeelError(0, 'STREAM_CUT', `the command's stream broke: ${(err as Error).message}`, { stdout, stderr });
    }
    throw new KeelError(0, 'STREAM_CUT', 'the command stream ended without an exit event', { stdout, stderr });
  }
}

export class Files {
  constructor(
    private readonly http: Http,
    private readonly base: string,
  ) {}

  /** Writes a file (parents made, an existing file replaced). Streams are sent as they are read. */
  write(path: string, data: string | Uint8Array | ArrayBuffer | Blob | ReadableStream<Uint8Array>): Promise<{ path: string; size: number }> {
    return this.http.json('PUT', `${this.base}/files`, { query: { path }, body: data as BodyInit, headers: { 'content-type': 'application/octet-stream' } });
  }
  /** The file's bytes. */
  async read(path: string): Promise<Uint8Array> {
    return new Uint8Array(await (await this.http.request('GET', `${this.base}/files`, { query: { path } })).arrayBuffer());
  }
  /** The file as a stream, nothing buffered. */
  async readStream(path: string): Promise<ReadableStream<Uint8Array>> {
    const res = await this.http.request('GET', `${this.base}/files`, { query: { path } });
    return res.body ?? new ReadableStream({ start: (c) => c.close() });
  }
  /** The file decoded as UTF-8. */
  async readText(path: string): Promise<string> {
    return (await this.http.request('GET', `${this.base}/files`, { query: { path } })).text();
  }
  /** A directory's entries, sorted by name. */
  async list(path = '.'): Promise<FileEntry[]> {
    const { entries } = await this.http.json<{ entries: FileEntry[] }>('GET', `${this.base}/files`, { query: { path } });
    return entries;
  }
  /** Removes a file, a symlink or an empty directory (`recursive: true`: a directory and its contents). */
  remove(path: string, opts: { recursive?: boolean } = {}): Promise<{ path: string; deleted: boolean }> {
    return this.http.json('DELETE', `${this.base}/files`, { query: { path, recursive: opts.recursive || undefined } });
  }
  move(from: string, to: string): Promise<{ from: string; to: string }> {
    return this.http.json('POST', `${this.base}/files/move`, { json: { from, to } });
  }
}

export interface ProcessOptions {
  onStdout?: (text: string) => void;
  onStderr?: (text: string) => void;
  cwd?: string;
  env?: Record<string, string>;
  name?: string;
}

export class Processes {
  constructor(
    private readonly http: Http,
    private readonly base: string,
  ) {}

  /** Starts a long-lived process; its output goes to the callbacks as it is written. */
  async start(command: string, o: ProcessOptions = {}): Promise<Process> {
    const body: Record<string, unknown> = { command };
    if (o.cwd !== undefined) body.workdir = o.cwd;
    if (o.env !== undefined) body.env = o.env;
    if (o.name !== undefined) body.name = o.name;
    const view = await this.http.json<ProcessView>('POST', `${this.base}/processes`, { json: body });
    return new Process(this.http, `${this.base}/processes/${encodeURIComponent(view.id)}`, view, o);
  }
  async list(): Promise<ProcessView[]> {
    return (await this.http.json<{ processes: ProcessView[] }>('GET', `${this.base}/processes`)).processes;
  }
  /** A handle on a process started earlier (its output is followed from what Keel keeps). */
  async get(id: string, o: ProcessOptions = {}): Promise<Process> {
    const path = `${this.base}/processes/${encodeURIComponent(id)}`;
    return new Process(this.http, path, await this.http.json<ProcessView>('GET', path), o);
  }
}

const SIGNALS: Record<string, number> = { HUP: 1, INT: 2, KILL: 9, TERM: 15 };

export class Process {
  readonly id: string;
  readonly view: ProcessView;
  readonly #exit: Promise<{ exitCode: number | null }>;
  #signalled: string | undefined;

  constructor(
    private readonly http: Http,
    private readonly path: string,
    view: ProcessView,
    o: ProcessOptions,
  ) {
    this.id = view.id;
    this.view = view;
    this.#exit = this.follow(o);
    this.#exit.catch(() => {});
  }

  /** Follows the output (resuming with Last-Event-ID after a dropped connection) to the exit event. */
  private async follow(o: ProcessOptions): Promise<{ exitCode: number | null }> {
    let last: string | undefined;
    // Tries in a row without an event: a follow that keeps delivering may reconnect any number of times.
    for (let attempt = 0; ; attempt++) {
      try {
        const res = await this.http.request('GET', `${this.path}/output`, { query: { follow: true }, headers: last ? { 'last-event-id': last } : {} });
        for await (const e of readEvents<SseEvent<any>>(res)) {
          attempt = 0;
          if (e.id !== undefined) last = e.id;
          if (e.event === 'stdout') o.onStdout?.(e.data.data);
          else if (e.event === 'stderr') o.onStderr?.(e.data.data);
          else if (e.event === 'exit') {
            let exitCode: number | null = e.data.exitCode ?? null;
            if (this.#signalled && (exitCode === null || exitCode < 128)) exitCode = 128 + (SIGNALS[this.#signalled] ?? 0);
            return { exitCode };
          }
        }
      } catch (err) {
        if (err instanceof KeelError && err.status >= 400 && err.status < 500) throw err;
        if (attempt >= 20) throw err;
      }
      await sleep(Math.min(100 * 2 ** attempt, 2000));
    }
  }

  /** Writes to the process's stdin (`eof: true` closes it after). */
  sendStdin(data: string | Uint8Array, opts: { eof?: boolean } = {}): Promise<{ id: string; bytes: number }> {
    return this.http.json('POST', `${this.path}/stdin`, { body: data as BodyInit, query: { eof: opts.eof || undefined }, headers: { 'content-type': 'application/octet-stream' } });
  }
  /** Signals the process and everything it started (KILL by default). */
  async kill(signal: 'KILL' | 'TERM' | 'INT' | 'HUP' = 'KILL'): Promise<void> {
    this.#signalled = signal;
    await this.http.json('POST', `${this.path}/signal`, { json: { signal } });
  }
  /** Resolves when the process ends: its exit code, 128 + the signal's number when killed (null when Keel lost it). */
  wait(): Promise<{ exitCode: number | null }> {
    return this.#exit;
  }
  /** The process as Keel sees it now. */
  get(): Promise<ProcessView> {
    return this.http.json('GET', this.path);
  }
  /** The output kept so far. */
  output(): Promise<{ stdout: string; stderr: string }> {
    return this.http.json('GET', `${this.path}/output`);
  }
}

export interface Preview {
  id: string;
  port: number;
  url: string;
  expiresAt: string;
  revoked?: boolean;
}

export class Previews {
  constructor(
    private readonly http: Http,
    private readonly base: string,
  ) {}
  /** A link to `port` of the workspace, on a host name of its own (`ttlSeconds` default 3600). */
  create(port: number, opts: { ttlSeconds?: number } = {}): Promise<Preview> {
    return this.http.json('POST', `${this.base}/previews`, { json: { port, ...opts } });
  }
  async list(): Promise<Preview[]> {
    return (await this.http.json<{ previews: Preview[] }>('GET', `${this.base}/previews`)).previews;
  }
  revoke(id: string): Promise<{ id: string; revoked: boolean }> {
    return this.http.json('DELETE', `${this.base}/previews/${encodeURIComponent(id)}`);
  }
}

export interface TerminalOptions {
  cols?: number;
  rows?: number;
  /** A command instead of the login shell. */
  command?: string;
  /** What the terminal writes, as bytes. */
  onData?: (data: Uint8Array) => void;
  /** Called once when the socket closes (the terminal ended, or was taken over). */
  onClose?: (code: number) => void;
  /** A WebSocket class where there is no global one (Node 20: `ws`). */
  WebSocket?: typeof WebSocket;
}

export interface Terminal {
  id: string;
  write(data: string | Uint8Array): void;
  resize(cols: number, rows: number): void;
  close(): void;
  /** Resolves when the socket closes. */
  closed: Promise<number>;
}

export class Terminals {
  constructor(
    private readonly http: Http,
    private readonly base: string,
  ) {}

  /** Opens a PTY in the workspace and attaches to it over a WebSocket. */
  async open(o: TerminalOptions = {}): Promise<Terminal> {
    const WS = o.WebSocket ?? (globalThis as { WebSocket?: typeof WebSocket }).WebSocket;
    if (!WS) throw new KeelError(0, 'NO_WEBSOCKET', 'this runtime has no WebSocket: pass one as the WebSocket option (Node 20: the ws package)');
    const body: Record<string, unknown> = { cols: o.cols ?? 80, rows: o.rows ?? 24 };
    if (o.command) body.command = o.command;
    const { id, ticket } = await this.http.json<{ id: string; ticket: string }>('POST', `${this.base}/terminals`, { json: body });
    const url = `${this.http.url.replace(/^http/, 'ws')}${this.base}/terminals/${encodeURIComponent(id)}?ticket=${encodeURIComponent(ticket)}`;
    const sock = new WS(url);
    sock.binaryType = 'arraybuffer';
    const closed = new Promise<number>((resolve) => {
      sock.addEventListener('close', (e) => {
        o.onClose?.((e as CloseEvent).code);
        resolve((e as CloseEvent).code);
      });
    });
    await new Promise<void>((resolve, reject) => {
      sock.addEventListener('open', () => resolve(), { once: true });
      sock.addEventListener('error', () => reject(new KeelError(0, 'TERMINAL_ERROR', 'the terminal socket could not be opened')), { once: true });
    });
    const enc = new TextEncoder();
    sock.addEventListener('message', (e) => {
      const d = (e as MessageEvent).data;
      o.onData?.(typeof d === 'string' ? enc.encode(d) : new Uint8Array(d as ArrayBuffer));
    });
    return {
      id,
      closed,
      write: (data) => sock.send((typeof data === 'string' ? enc.encode(data) : data) as unknown as ArrayBuffer),
      resize: (cols, rows) => sock.send(JSON.stringify({ type: 'resize', cols, rows })),
      close: () => sock.close(),
    };
  }
}

// ---- agent sessions ----

type RawAgentEvent = Schemas['AgentEvent'];
/**
 * One event of a turn: `type` its `event:` name, `id` its event id, `data` the payload the API
 * sends, typed by `type` (`delta`: {content}; `tool`: {id, name, input, output}; `approval`: {id,
 * toolCallId, name, input}, decided by its `data.id`; `done`: the assistant reply; `error`: the error body).
 */
export type AgentEvent = RawAgentEvent extends infer R ? (R extends { event: infer T; data: infer D } ? { type: T; id: string; data: D } : never) : never;
export type AgentEventType = AgentEvent['type'];
export type AgentSessionData = Schemas['Session'];

export interface CreateSessionBody {
  workspaceId: string;
  model: string;
  /** `never` (default), `always` or the names of the tools that wait for a decision. */
  toolApproval?: 'never' | 'always' | string[];
  context?: Record<string, unknown>;
  [k: string]: unknown;
}

export class AgentSessions {
  constructor(private readonly http: Http) {}
  async create(body: CreateSessionBody): Promise<AgentSession> {
    return new AgentSession(this.http, await this.http.json<AgentSessionData>('POST', '/api/agent/sessions', { json: body }));
  }
  async get(id: string): Promise<AgentSession> {
    return new AgentSession(this.http, await this.http.json<AgentSessionData>('GET', `/api/agent/sessions/${encodeURIComponent(id)}`));
  }
  async list(query: { workspaceId?: string } = {}): Promise<unknown[]> {
    return (await this.http.json<{ sessions: unknown[] }>('GET', '/api/agent/sessions', { query })).sessions;
  }
}

export interface AgentSession extends AgentSessionData {}
export class AgentSession {
  readonly #http: Http;
  constructor(http: Http, data: AgentSessionData) {
    this.#http = http;
    Object.assign(this, data);
  }
  private get base() {
    return `/api/agent/sessions/${encodeURIComponent(this.id)}`;
  }

  /**
   * Sends a message and iterates over the turn's events until its `done` or `error`. A connection
   * that drops before them is resumed from the last event id (`GET .../events` with Last-Event-ID):
   * nothing is missed, nothing comes twice.
   */
  async *send(message: string, opts: { signal?: AbortSignal; maxReconnects?: number } = {}): AsyncGenerator<AgentEvent> {
    let last: string | undefined;
    let res: Response | undefined = await this.#http.request('POST', `${this.base}/messages`, { json: { message, stream: true }, signal: opts.signal });
    const max = opts.maxReconnects ?? 10;
    for (let attempt = 0; ; ) {
      try {
        if (!res) res = await this.#http.request('GET', `${this.base}/events`, { headers: last ? { 'last-event-id': last } : {}, signal: opts.signal });
        for await (const e of readEvents(res)) {
          if (e.id !== undefined) last = e.id;
          const event = { type: e.event, id: e.id ?? '', data: e.data } as AgentEvent;
          yield event;
          attempt = 0;
          if (event.type === 'done' || event.type === 'error') return;
        }
      } catch (err) {
        if (opts.signal?.aborted || (err instanceof KeelError && err.status >= 400 && err.status < 500)) throw err;
      }
      res = undefined;
      if (++attempt > max) throw new KeelError(0, 'STREAM_CUT', `the turn's stream dropped ${max} times in a row`, { lastEventId: last ?? null });
      await sleep(Math.min(100 * 2 ** attempt, 3000));
    }
  }

  approve(approvalId: string): Promise<unknown> {
    return this.#http.json('POST', `${this.base}/approvals/${encodeURIComponent(approvalId)}`, { json: { decision: 'approve' } });
  }
  deny(approvalId: string, reason?: string): Promise<unknown> {
    return this.#http.json('POST', `${this.base}/approvals/${encodeURIComponent(approvalId)}`, { json: { decision: 'deny', ...(reason !== undefined ? { reason } : {}) } });
  }
  async approvals(opts: { all?: boolean } = {}): Promise<unknown[]> {
    return (await this.#http.json<{ approvals: unknown[] }>('GET', `${this.base}/approvals`, { query: { status: opts.all ? 'all' : undefined } })).approvals;
  }
  cancel(): Promise<{ id: string; cancelled: boolean }> {
    return this.#http.json('POST', `${this.base}/cancel`);
  }
  async refresh(): Promise<this> {
    Object.assign(this, await this.#http.json<AgentSessionData>('GET', this.base));
    return this;
  }
  delete(): Promise<{ id: string; deleted: boolean }> {
    return this.#http.json('DELETE', this.base);
  }
}
