// Picks the bus named by APP_BUS.
import type { Logger } from '../runtime';
import type { Bus } from './bus';
import { createMemoryBus } from './memory';
import { createNatsBus } from './nats';

export type { Bus } from './bus';

export async function openBus(url: string, log: Logger): Promise<Bus> {
  return url === 'memory' ? createMemoryBus(log) : createNatsBus(url, log);
}
