// The build context's pure parts: which user a Dockerfile's workspaces run as (its last stage's last
// numeric USER), whether that stage starts from a built-in image, and the step that gives the workspace
// user its /workspace.
import { describe, expect, test } from 'bun:test';
import { fromBuiltin, lastUser, ownWorkspace } from '../../../../src/services/workspaces/templates/templates.context';

describe('lastUser', () => {
  test("the last stage's last numeric USER; a bare uid is uid:uid", () => {
    expect(lastUser('FROM keel/minimal\nUSER root\nRUN true\nUSER 1500\n')).toBe('1500:1500');
    expect(lastUser('FROM keel/minimal\nUSER 1500:20\n# a comment\n')).toBe('1500:20');
    expect(lastUser('FROM a AS build\nUSER 42\nFROM keel/minimal\nCOPY --from=build /x /x\n')).toBeUndefined();
  });
  test('a named USER, or none, says nothing', () => {
    expect(lastUser('FROM keel/minimal\nUSER dev\n')).toBeUndefined();
    expect(lastUser('FROM keel/minimal\n')).toBeUndefined();
  });
});

test("fromBuiltin reads the last stage's FROM", () => {
  expect(fromBuiltin('FROM keel/minimal\n')).toBe(true);
  expect(fromBuiltin('from keel/bun-typescript:1 \n')).toBe(true);
  expect(fromBuiltin('FROM keel/minimal AS a\nFROM python:3.12-slim\n')).toBe(false);
  expect(fromBuiltin('FROM keel/minimalist\n')).toBe(false);
});

test('ownWorkspace appends one COPY --chown of Keel\'s part of the context', () => {
  expect(ownWorkspace('FROM x\nUSER 7\n\n', '7:7')).toBe('FROM x\nUSER 7\nCOPY --chown=7:7 .keel-root/ /\n');
});
