// Host ports: whether a process on the Keel host holds one, and picking free ones from a range. The
// check binds the port on every IPv4 address for a moment, which fails when any listener (loopback or
// wildcard) has it.
import { createServer } from 'node:net';

export function hostPortFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen({ port, host: '0.0.0.0', exclusive: true }, () => srv.close(() => resolve(true)));
  });
}

/**
 * The first `count` ports of [lo, hi] that are neither in `reserved` nor held on the host,
 * scanning from a rotating start so freed ports are not reused at once.
 */
export async function allocatePorts(range: [number, number], reserved: Set<number>, count: number, startHint = 0): Promise<number[] | null> {
  const [lo, hi] = range;
  const size = hi - lo + 1;
  const out: number[] = [];
  for (let i = 0; i < size && out.length < count; i++) {
    const port = lo + ((startHint + i) % size);
    if (reserved.has(port)) continue;
    if (await hostPortFree(port)) out.push(port);
  }
  return out.length === count ? out : null;
}
