// The init script a workspace container runs: it starts every service the template declares,
// restarts one that exits, and tags each line of its output with the service and the stream
// (RS name US o|e US line), then runs the template's main command untagged. Keel reads the
// tags back from the engine's log stream (logs.parse.ts), so a service's lines keep their name
// and stderr stays distinguishable from stdout, for running and stopped workspaces alike.
// Written for a POSIX sh (busybox included); runs under the engine's init (tini) as PID 1's child.

export interface SupervisedService {
  name: string;
  command: string;
}

/** Separators that no ordinary log line contains. */
export const RS = '\x1e';
export const US = '\x1f';

const shQuote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

export function supervisorScript(main: string, services: SupervisedService[]): string {
  const lines = [
    `keel_tag() { while IFS= read -r l || [ -n "$l" ]; do printf '\\036%s\\037%s\\037%s\\n' "$1" "$2" "$l"; done; }`,
    // stdout of the command is tagged o, its stderr e; both reach the container's stdout.
    `keel_svc() { while :; do { { sh -c "$2" | keel_tag "$1" o; } 2>&1 1>&3 | keel_tag "$1" e; } 3>&1; printf '\\036%s\\037e\\037%s\\n' "$1" "keel: service exited; restarting in 2 s"; sleep 2; done; }`,
    `trap 'kill 0' TERM INT`,
    ...services.map((s) => `keel_svc ${shQuote(s.name)} ${shQuote(s.command)} &`),
    `sh -c ${shQuote(main)} &`,
    `wait $!`,
  ];
  return lines.join('\n');
}
