// Path confinement: the one check that a real path stays under its root.
import { expect, test } from 'bun:test';
import { isInside } from '../../../src/platform/paths';

test('a path below the root, or the root itself, is inside', () => {
  expect(isInside('/media', '/media')).toBe(true);
  expect(isInside('/media', '/media/Movies/a.mkv')).toBe(true);
  expect(isInside('/media/', '/media/Movies')).toBe(true);
});

test('a sibling sharing the prefix, a parent or another tree is outside', () => {
  expect(isInside('/media', '/media2/a.mkv')).toBe(false);
  expect(isInside('/media', '/')).toBe(false);
  expect(isInside('/media/Movies', '/media')).toBe(false);
  expect(isInside('/media', '/etc/passwd')).toBe(false);
});

test('a root of / contains every absolute path', () => {
  expect(isInside('/', '/')).toBe(true);
  expect(isInside('/', '/srv/media/Movies')).toBe(true);
});
