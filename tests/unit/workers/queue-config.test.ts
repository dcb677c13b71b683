// Which job queue a workers process takes (APP_WORKERS_QUEUE), read from its environment alone.
import { expect, test } from 'bun:test';
import { ConfigError } from '../../../src/platform/config';
import { loadWorkersConfig } from '../../../src/services/workers/workers.config';

const nats = { APP_BUS: 'nats://keel:pw@127.0.0.1:4222' };

test('by default the queue is the database on the in-process bus and JetStream on NATS', () => {
  expect(loadWorkersConfig({}).queue).toBe('database');
  expect(loadWorkersConfig({ APP_BUS: 'memory' }).queue).toBe('database');
  expect(loadWorkersConfig(nats).queue).toBe('auto');
});

test('the database queue can be kept on NATS, and jetstream is taken only with a NATS bus', () => {
  expect(loadWorkersConfig({ ...nats, APP_WORKERS_QUEUE: 'database' }).queue).toBe('database');
  expect(loadWorkersConfig({ ...nats, APP_WORKERS_QUEUE: 'jetstream' }).queue).toBe('jetstream');
  expect(() => loadWorkersConfig({ APP_WORKERS_QUEUE: 'jetstream' })).toThrow(new ConfigError('APP_WORKERS_QUEUE', 'jetstream needs APP_BUS to be a nats:// URL'));
});

test('an unknown queue names the variable and the choices, not the value', () => {
  let err: unknown;
  try {
    loadWorkersConfig({ APP_WORKERS_QUEUE: 'redis-secret-value' });
  } catch (e) {
    err = e;
  }
  expect(err).toBeInstanceOf(ConfigError);
  expect(String((err as Error).message)).toContain('must be auto, database or jetstream');
  expect(String((err as Error).message)).not.toContain('redis-secret-value');
});
