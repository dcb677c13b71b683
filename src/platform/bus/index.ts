// Picks the bus named by APP_BUS. The NATS client is loaded only when a NATS bus is asked for.
import type { Logger } from '../runtime';
import type { Bus } from './bus';
import { createMemoryBus } from './memory';

export type { Bus } from './bus';

export async function openBus(url: string, log: Logger, opts: { maxDeliver?: number } = {}): Promise<Bus> {
  if (url === 'memory') return createMemoryBus(log);
  const { createNatsBus } = await import('./nats');
  return createNatsBus(url, log, { maxDeliver: opts.maxDeliver });
}
