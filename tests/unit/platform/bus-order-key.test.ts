// The order key of a durable event: what one JetStream consumer keeps in order across a failure.
import { expect, test } from 'bun:test';
import { orderKeyOf } from '../../../src/platform/bus/bus';

test("a workspace event's key is its workspace, whatever the event", () => {
  const ws = { id: 'ws_1', name: 'n', status: 'running' };
  expect(orderKeyOf('evt.workspace.created', { workspace: ws })).toBe('workspace:ws_1');
  expect(orderKeyOf('evt.workspace.deleted', { workspace: ws })).toBe('workspace:ws_1');
});

test("a catalog event's key is its asset, and a job's progress its job", () => {
  expect(orderKeyOf('evt.catalog.assetIndexed', { assetId: 'ast_1' })).toBe('asset:ast_1');
  expect(orderKeyOf('evt.catalog.assetAvailability', { assetId: 'ast_1' })).toBe('asset:ast_1');
  expect(orderKeyOf('evt.workers.jobProgress', { job: { id: 'job_1' } })).toBe('job:job_1');
});

test('an event without its key (or not JSON) keeps the order of its subject', () => {
  expect(orderKeyOf('evt.workspace.created', {})).toBe('evt.workspace.created');
  expect(orderKeyOf('evt.catalog.assetIndexed', undefined)).toBe('evt.catalog.assetIndexed');
  expect(orderKeyOf('evt.workspace.created', { workspace: { id: 7 } })).toBe('evt.workspace.created');
});
