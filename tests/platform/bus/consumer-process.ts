// A JetStream consumer in a process of its own, for the test that kills it mid-stream: it takes the
// workspace events of one run, fails the first attempt of every seventh, and prints each event it
// handled as a JSON line (before the ack, so an event handled twice is printed twice).
// Usage: bun consumer-process.ts <nats url> <durable> <workspace id prefix>
import { createNatsBus } from '../../../src/platform/bus/nats';
import { createLogger } from '../../../src/platform/runtime';

const [url, durable, prefix] = process.argv.slice(2) as [string, string, string];
const failedOnce = new Set<string>();
const bus = await createNatsBus(url, createLogger({}, 'error'), { ackWaitMs: 4000, retryDelayMs: () => 100 });
bus.consume<'evt.workspace.started'>(durable, 'evt.workspace.*', async (e) => {
  if (!e.workspace.id.startsWith(prefix)) return;
  await Bun.sleep(5);
  const n = Number(e.workspace.name);
  if (n % 7 === 3 && !failedOnce.has(e.eventId)) {
    failedOnce.add(e.eventId);
    throw new Error('fails once');
  }
  process.stdout.write(`${JSON.stringify({ ws: e.workspace.id, n })}\n`);
});
process.stdout.write('ready\n');
