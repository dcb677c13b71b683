// execCollect (engine/engine.ts) over any execStart and killProcessGroup: the engine's own exec
// (docker-exec.ts) and keeld's (with-daemon.ts) bound a helper's output the same way.
import { settledExitCode, type Engine, type ExecHandle } from './engine';

/** Output bytes (both streams together) execCollect keeps by default: its helpers (kill, du, rm) print a line. */
export const COLLECT_MAX_BYTES = 64 * 1024;
/**
 * $@ = the command. Reports its pid on stderr first (an exec's process leads its own process group),
 * then becomes the command (same pid, same group, its exit code).
 */
const COLLECT_WRAPPER = `printf '%s\\n' "$$" >&2; exec "$@"`;

export function collector(execStart: Engine['execStart'], killProcessGroup: Engine['killProcessGroup']): Engine['execCollect'] {
  return async function execCollect(containerId, cmd, maxBytes = COLLECT_MAX_BYTES) {
    const out = { stdout: [] as Uint8Array[], stderr: [] as Uint8Array[] };
    let held = 0;
    let truncated = false;
    let pid: number | undefined;
    let preamble = '';
    let h: ExecHandle | undefined;
    // Bounded at the stream: past maxBytes nothing more is kept, the exec is closed and its process
    // group killed (a closed exec's process is not ended by the engine: it would block on its full
    // pipe for ever). The pid comes first on stderr, but the engine may pass stdout on before it: a
    // bound reached without the pid reads on, keeping nothing, until the pid comes, then kills and
    // closes (closing first would discard the pid and leave the command flooding).
    const stop = () => {
      if (pid === undefined) return;
      h?.close();
      if (pid > 1) void killProcessGroup(containerId, pid);
    };
    h = await execStart(containerId, { cmd: ['sh', '-c', COLLECT_WRAPPER, 'keel-collect', ...cmd] }, (s, b) => {
      if (s === 'stderr' && pid === undefined) {
        preamble += Buffer.from(b).toString('latin1');
        const nl = preamble.indexOf('\n');
        if (nl < 0) return;
        pid = Number(preamble.slice(0, nl)) || -1;
        if (truncated) return stop();
        b = Buffer.from(preamble.slice(nl + 1), 'latin1');
        if (!b.byteLength) return;
      }
      if (truncated) return;
      const room = maxBytes - held;
      if (b.byteLength > room) {
        truncated = true;
        out[s].push(b.subarray(0, room));
        return stop();
      }
      out[s].push(b);
      held += b.byteLength;
    });
    if (truncated) stop();
    await h.done;
    const text = (parts: Uint8Array[]) => Buffer.concat(parts).toString('utf8');
    return { exitCode: truncated ? null : await settledExitCode(h), stdout: text(out.stdout), stderr: text(out.stderr), truncated };
  };
}
