// A full garbage collection every so many bytes passed through. Streaming a large body retains
// nothing, but each chunk it passes on leaves garbage (decoded text, JSON, encoded frames) that the
// collector lets pile up for a hundred megabytes before it runs: a stream that must grow Keel by
// 32 MiB at most counts what it moves and collects on its own (files.service.ts measured the cost:
// ~15 % of a transfer's throughput for a full collection every 8 MB).

/** Counts bytes moved and runs a full collection every `everyBytes`. */
export function createChurnGuard(everyBytes: number) {
  let since = 0;
  return (bytes: number) => {
    since += bytes;
    if (since < everyBytes) return;
    since = 0;
    Bun.gc(true);
  };
}
