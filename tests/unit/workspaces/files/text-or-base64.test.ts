// How a tool's read is answered: UTF-8 text stays text, anything else (not UTF-8, or holding a NUL,
// as /dev/zero does) is base64, and a read cut at its bound leaves out a character split there.
import { expect, test } from 'bun:test';
import { textOrBase64 } from '../../../../src/services/workspaces/files/text-or-base64';

const bytes = (s: string) => new TextEncoder().encode(s);

test('UTF-8 text is answered as text', () => {
  expect(textOrBase64(bytes('héllo\n'), false)).toEqual({ encoding: 'utf-8', content: 'héllo\n' });
});

test('bytes that are not UTF-8 are answered as base64', () => {
  const b = Uint8Array.from([0x41, 0xff, 0xfe]);
  expect(textOrBase64(b, false)).toEqual({ encoding: 'base64', content: Buffer.from(b).toString('base64') });
});

test('a NUL makes valid UTF-8 base64 (1 MiB of /dev/zero is not 6 MiB of \\u0000 text)', () => {
  const zeros = new Uint8Array(1024);
  const r = textOrBase64(zeros, true);
  expect(r.encoding).toBe('base64');
  expect(Buffer.from(r.content, 'base64')).toEqual(Buffer.alloc(1024));
});

test('a truncated read drops a character cut at the bound and stays text', () => {
  const cut = bytes('aé').subarray(0, 2); // "a" and the first byte of "é"
  expect(textOrBase64(cut, true)).toEqual({ encoding: 'utf-8', content: 'a' });
  expect(textOrBase64(cut, false).encoding).toBe('base64');
});

test('a view into a larger buffer encodes only its own bytes', () => {
  const whole = Uint8Array.from([1, 2, 0xff, 3, 4]);
  expect(textOrBase64(whole.subarray(2, 4), false)).toEqual({ encoding: 'base64', content: Buffer.from([0xff, 3]).toString('base64') });
});
