// The client of keeld, the daemon in every workspace container (daemon/, docs/computer.md#the-daemon):
// one TCP connection per process to the container's address on its own network. Keel sends one JSON
// line (the request and the token), then frames; keeld answers with frames. A frame is a type byte,
// a big-endian uint32 length and that many bytes (daemon/server.go has the same table).
import { createHash, createHmac } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import { EngineError, type ExecHandle, type StdStream, type TtyHandle } from './engine';
import { socketWriter } from './socket-writer';

export const KEELD_PORT = 49983;
/** Where keeld's volume is mounted, read-only, in every workspace container. */
export const KEELD_MOUNT = '/.keel';
export const KEELD_PATH = `${KEELD_MOUNT}/keeld`;
/** On a container: the salt its token is made from (labels are not visible inside the container). */
export const LABEL_DAEMON = 'dev.keel.daemon';

const F = { stdout: 1, stderr: 2, started: 3, exit: 4, error: 5, stdin: 10, eof: 11, resize: 12 } as const;
/** keeld takes frames of up to 1 MiB; stdin is sent in pieces of this size. */
const STDIN_PIECE = 256 * 1024;
/** Stdin bytes queued on the socket before a write waits (memory per upload stays bounded). */
const STDIN_QUEUE = 1024 * 1024;
const CONNECT_TIMEOUT_MS = 2_000;
/** From the request sent to the process started: a fork and exec, unless the container is frozen. */
const START_TIMEOUT_MS = 10_000;

/** Where a container's keeld listens and the token it takes. */
export interface KeeldTarget {
  address: string;
  token: string;
}

/** The token of the container whose LABEL_DAEMON is `salt`: only Keel, holding `key`, can make it. */
export const keeldToken = (key: Buffer, salt: string) => createHmac('sha256', key).update(`keeld:${salt}`).digest('base64url');
/** What keeld is given on its command line: the token's SHA-256. The token itself never enters the container. */
export const keeldVerifier = (token: string) => createHash('sha256').update(token).digest('hex');

/**
 * keeld could not be reached, or refused the request before starting anything: the caller may ask the
 * engine instead. `code` is the connection's error (ECONNREFUSED: nothing listens, keeld is gone).
 */
export class KeeldUnreachable extends Error {
  constructor(
    message: string,
    readonly code: string,
  ) {
    super(message);
    this.name = 'KeeldUnreachable';
  }
}

/** A frame's header, for a payload of `length` bytes written after it. */
function header(kind: number, length: number): Buffer {
  const b = Buffer.allocUnsafe(5);
  b[0] = kind;
  b.writeUInt32BE(length, 1);
  return b;
}

const frame = (kind: number, payload: Uint8Array) => Buffer.concat([header(kind, payload.byteLength), payload]);

/** Cuts keeld's bytes into frames; a frame split across reads is joined once whole. */
function frameReader(onFrame: (kind: number, payload: Buffer) => void) {
  let parts: Buffer[] = [];
  let held = 0;
  let need = 5;
  return (chunk: Buffer) => {
    let buf = chunk;
    if (held) {
      parts.push(chunk);
      held += chunk.length;
      if (held < need) return;
      buf = Buffer.concat(parts, held);
      parts = [];
      held = 0;
    }
    let off = 0;
    while (buf.length - off >= 5) {
      const len = buf.readUInt32BE(off + 1);
      if (buf.length - off - 5 < len) break;
      onFrame(buf[off]!, buf.subarray(off + 5, off + 5 + len));
      off += 5 + len;
    }
    if (off < buf.length) {
      const rest = buf.subarray(off);
      parts = [rest];
      held = rest.length;
      need = rest.length >= 5 ? 5 + rest.readUInt32BE(1) : 5;
    }
  };
}

interface Session {
  socket: Socket;
  /** The process's pid (0 when it could not start: its message and exit code follow). */
  pid: number;
  /** The exit code once keeld sent it; null before, or when the connection ended without it. */
  code(): number | null;
  /** Resolves when the connection has ended. */
  ended: Promise<void>;
}

/**
 * Connects, sends `request` and resolves at keeld's first answer. Fails with KeeldUnreachable when
 * nothing was started (no connection, a refusal), with EngineError when keeld took the request and
 * did not answer in time.
 */
function open(target: KeeldTarget, request: object, onOutput: (kind: number, bytes: Buffer) => void): Promise<Session> {
  return new Promise<Session>((resolve, reject) => {
    const socket = connect({ host: target.address, port: KEELD_PORT, noDelay: true });
    let session: Session | undefined;
    let code: number | null = null;
    const ended = Promise.withResolvers<void>();
    const fail = (e: Error) => {
      clearTimeout(timer);
      socket.destroy();
      reject(e);
    };
    let timer = setTimeout(() => fail(new KeeldUnreachable(`no connection within ${CONNECT_TIMEOUT_MS} ms`, 'ETIMEDOUT')), CONNECT_TIMEOUT_MS);
    socket.once('connect', () => {
      clearTimeout(timer);
      timer = setTimeout(() => fail(new EngineError(`the workspace daemon did not start the process within ${START_TIMEOUT_MS / 1000} s`, 'failed')), START_TIMEOUT_MS);
      socket.write(JSON.stringify({ ...request, token: target.token }) + '\n');
    });
    const begin = (pid: number) => {
      if (session) return;
      clearTimeout(timer);
      session = { socket, pid, code: () => code, ended: ended.promise };
      resolve(session);
    };
    socket.on(
      'data',
      frameReader((kind, payload) => {
        if (kind === F.started) begin(Number(payload.toString('latin1')) || 0);
        else if (kind === F.stdout || kind === F.stderr) onOutput(kind, payload);
        else if (kind === F.exit) {
          code = Number(payload.toString('latin1'));
          begin(0);
        } else if (kind === F.error && !session) fail(new KeeldUnreachable(`the workspace daemon refused: ${payload.toString('utf8').slice(0, 200)}`, 'EREFUSED'));
      }),
    );
    // 'close' may come before 'error' (Bun): the error's code is kept for whichever comes last.
    let cause: NodeJS.ErrnoException | undefined;
    socket.on('error', (e: NodeJS.ErrnoException) => {
      cause = e;
      if (!session) fail(new KeeldUnreachable(e.message, e.code ?? 'ECONNRESET'));
    });
    socket.on('close', () => {
      if (!session) fail(new KeeldUnreachable(cause?.message ?? 'the connection closed before an answer', cause?.code ?? 'ECONNRESET'));
      ended.resolve();
    });
  });
}

/** Stdin frames with the socket's backpressure: write waits while more than STDIN_QUEUE bytes wait to be sent. */
function stdinWriter(socket: Socket) {
  const raw = socketWriter(socket, STDIN_QUEUE);
  // The header apart, so the piece is sent as it is, never copied.
  const send = (piece: Uint8Array): Promise<void> => {
    if (!socket.destroyed) socket.write(header(F.stdin, piece.byteLength));
    return raw.write(piece);
  };
  return {
    async write(bytes: Uint8Array): Promise<void> {
      for (let off = 0; off < bytes.byteLength; off += STDIN_PIECE) await send(bytes.subarray(off, off + STDIN_PIECE));
    },
    // An EOF frame, not a half-close: keeld takes the connection's end as the client gone.
    end: () => void (socket.destroyed || socket.write(header(F.eof, 0))),
  };
}

/** Engine.execStart through keeld. close() ends the connection: the process's pipes close (EOF, EPIPE). */
export async function keeldExec(target: KeeldTarget, opts: { cmd: string[]; env?: string[]; stdin?: boolean }, onChunk: (stream: StdStream, bytes: Uint8Array) => void): Promise<ExecHandle> {
  let closed = false;
  const s = await open(target, { op: 'exec', cmd: opts.cmd, env: opts.env ?? [], stdin: opts.stdin === true }, (kind, bytes) => {
    if (!closed) onChunk(kind === F.stdout ? 'stdout' : 'stderr', bytes);
  });
  return {
    done: s.ended,
    close() {
      closed = true;
      s.socket.destroy();
    },
    pause: () => void s.socket.pause(),
    resume: () => void s.socket.resume(),
    exitCode: async () => s.code(),
    ...(opts.stdin ? { stdin: stdinWriter(s.socket) } : {}),
  };
}

/** Engine.execTty through keeld: a process on a terminal of its own; close() hangs up (SIGHUP). */
export async function keeldTty(target: KeeldTarget, opts: { cmd: string[]; env?: string[]; cols: number; rows: number }, onData: (bytes: Uint8Array) => void): Promise<TtyHandle> {
  let closed = false;
  const s = await open(target, { op: 'exec', tty: true, cmd: opts.cmd, env: opts.env ?? [], cols: opts.cols, rows: opts.rows }, (_, bytes) => {
    if (!closed) onData(bytes);
  });
  const input = stdinWriter(s.socket);
  return {
    done: s.ended,
    write: (bytes) => input.write(bytes),
    async resize(cols, rows) {
      const size = Buffer.allocUnsafe(4);
      size.writeUInt16BE(cols, 0);
      size.writeUInt16BE(rows, 2);
      if (!s.socket.destroyed) s.socket.write(frame(F.resize, size));
    },
    close() {
      closed = true;
      s.socket.destroy();
    },
  };
}

/** Sends `signal` to the process group `pid` leads, and to `pid`. */
export async function keeldSignal(target: KeeldTarget, pid: number, signal: number): Promise<void> {
  const s = await open(target, { op: 'signal', pid, signal }, () => {});
  await s.ended;
}

/** Answers once keeld answers (the benches and the recovery's check). */
export async function keeldPing(target: KeeldTarget): Promise<void> {
  const s = await open(target, { op: 'ping' }, () => {});
  await s.ended;
}
