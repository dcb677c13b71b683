// APP_TOOL_READ_MAX_BYTES: 1 MiB by default, a whole number of bytes up to 8 MiB; a bad value stops
// start-up naming the variable.
import { expect, test } from 'bun:test';
import { loadWorkspacesConfig } from '../../../../src/services/workspaces/workspaces.config';

test('a tool reads at most 1 MiB of a file by default, or what APP_TOOL_READ_MAX_BYTES says', () => {
  expect(loadWorkspacesConfig({}).toolReadMaxBytes).toBe(1024 * 1024);
  expect(loadWorkspacesConfig({ APP_TOOL_READ_MAX_BYTES: '4096' }).toolReadMaxBytes).toBe(4096);
});

test.each(['0', '-1', '8388609', 'lots'])('APP_TOOL_READ_MAX_BYTES=%s stops start-up naming the variable', (value) => {
  expect(() => loadWorkspacesConfig({ APP_TOOL_READ_MAX_BYTES: value })).toThrow('APP_TOOL_READ_MAX_BYTES');
});
