// The build context's pure parts: which user a Dockerfile's workspaces run as (its last stage's last
// numeric USER), whether that stage starts from a built-in image, and the step that gives the workspace
// user its /workspace.
import { describe, expect, test } from 'bun:test';
import { checkDockerfile, fromBuiltin, keelImages, lastUser, numericUser, ownWorkspace } from '../../../../src/services/workspaces/templates/templates.context';

describe('lastUser', () => {
  test("the last stage's last numeric USER; a bare uid is uid:uid", () => {
    expect(lastUser('FROM keel/minimal\nUSER root\nRUN true\nUSER 1500\n')).toBe('1500:1500');
    expect(lastUser('FROM keel/minimal\nUSER 1500:20\n# a comment\n')).toBe('1500:20');
    expect(lastUser('FROM a AS build\nUSER 42\nFROM keel/minimal\nCOPY --from=build /x /x\n')).toBeUndefined();
  });
  test('a named USER as written; none, or an odd one, says nothing', () => {
    expect(lastUser('FROM keel/minimal\nUSER dev\n')).toBe('dev');
    expect(lastUser('FROM keel/minimal\nUSER dev:staff\n')).toBe('dev:staff');
    expect(lastUser('FROM keel/minimal\n')).toBeUndefined();
    expect(lastUser('FROM keel/minimal\nUSER $APP_USER\n')).toBeUndefined();
  });
});

describe('numericUser', () => {
  const passwd = 'root:x:0:0:root:/root:/bin/sh\ndev:x:1700:1701:dev:/workspace:/bin/sh\n';
  const group = 'root:x:0:\ndev:x:1701:\nstaff:x:50:dev\n';
  test("a name is its passwd uid and primary gid; a named group is the group file's", () => {
    expect(numericUser('dev', passwd, group)).toBe('1700:1701');
    expect(numericUser('dev:staff', passwd, group)).toBe('1700:50');
    expect(numericUser('1500', null, null)).toBe('1500:1500');
    expect(numericUser('1500:20', null, null)).toBe('1500:20');
    expect(numericUser('1500:staff', passwd, group)).toBe('1500:50');
  });
  test('a name the files do not have is undefined', () => {
    expect(numericUser('ghost', passwd, group)).toBeUndefined();
    expect(numericUser('dev', null, null)).toBeUndefined();
    expect(numericUser('dev:nogroup', passwd, group)).toBeUndefined();
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

describe('keelImages', () => {
  test('FROM and COPY --from naming template or snapshot images, however spelled', () => {
    expect(keelImages('FROM keel/minimal\nCOPY --from=keel-template:tpl_a-v1 /x /x\n')).toEqual([{ line: 2, image: 'keel-template:tpl_a-v1' }]);
    expect(keelImages('FROM docker.io/library/keel-snapshot:snap_1\n')).toEqual([{ line: 1, image: 'keel-snapshot:snap_1' }]);
    expect(keelImages('ARG BASE=keel-template:tpl_b-v2\nFROM ${BASE} AS b\nFROM $BASE\n').map((i) => i.line)).toEqual([2, 3]);
    expect(keelImages('FROM --platform=linux/amd64 keel-snapshot@sha256:abc\n')).toEqual([{ line: 1, image: 'keel-snapshot@sha256:abc' }]);
  });
  test('other images are not Keel\'s; a variable with no ARG default is refused', () => {
    expect(keelImages('ARG V=3.12\nFROM python:${V}-slim\nCOPY --from=python:3.12 /x /x\n')).toEqual([]);
    expect(() => keelImages('FROM ${SOMETHING}\n')).toThrow(/line 1 is refused/);
    expect(() => keelImages('ARG B\nFROM $B\n')).toThrow(/line 2 is refused/);
  });
});

describe('checkDockerfile: registries', () => {
  const check = (d: string) => () => checkDockerfile(d, (b) => `keel/${b}:1`);
  test('a registry at an address literal or on this host is refused, naming the line', () => {
    expect(check('FROM 169.254.169.254/latest\n')).toThrow(/line 1 is refused: images are pulled from registries by name/);
    expect(check('FROM keel/minimal\nCOPY --from=127.0.0.1:3100/x:1 / /x\n')).toThrow(/line 2 is refused/);
    expect(check('FROM localhost:5000/tools\n')).toThrow(/line 1/);
    expect(check('FROM [::1]:5000/tools\n')).toThrow(/line 1/);
    expect(check('FROM 2130706433:80/tools\n')).toThrow(/line 1/);
    expect(check('ARG R=10.0.0.5:5000\nFROM ${R}/tools\n')).toThrow(/line 2/);
  });
  test('names are fine: Docker Hub, a registry by its name, the built-ins', () => {
    expect(check('FROM python:3.12-slim\nFROM ghcr.io/acme/tools:1\nFROM docker.io/library/alpine\nFROM keel/minimal\n')).not.toThrow();
  });
});
