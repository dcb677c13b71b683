// The playback service's pure parts: the cut of a keyframe index into segments, and the signed URL token.
import { describe, expect, test } from 'bun:test';
import { cutSegments } from '../../../src/services/playback/hls';
import { createUrlSigner } from '../../../src/services/playback/url-token';

describe('cutting segments at keyframes', () => {
  test('keyframes every 2 s give 6 s segments that start on keyframes', () => {
    const keys = Array.from({ length: 10 }, (_, i) => i * 2000);
    expect(cutSegments(keys, 20_000, 6000).map((s) => [s.startMs, s.endMs])).toEqual([[0, 6000], [6000, 12000], [12000, 18000], [18000, 20000]]);
  });

  test('each boundary is the keyframe nearest to 6 s after the last one', () => {
    const keys = [0, 4000, 6500, 9000, 13100, 15000, 30000];
    // 6500 is nearer 6000 than 4000; 15000 nearer 19100 than 30000; the 1 s piece after 30000 joins the one before.
    expect(cutSegments(keys, 31_000, 6000).map((s) => s.startMs)).toEqual([0, 6500, 13100, 15000]);
  });

  test('a last piece under a quarter of the target joins the one before', () => {
    const keys = [0, 2000, 4000, 6000, 8000, 10000, 12000];
    expect(cutSegments(keys, 13_000, 6000).map((s) => [s.startMs, s.endMs])).toEqual([[0, 6000], [6000, 13000]]);
  });

  test('without keyframes (audio only) the cut is a plain grid', () => {
    expect(cutSegments([], 14_000, 6000).map((s) => s.startMs)).toEqual([0, 6000, 12000]);
  });
});

describe('the URL token', () => {
  const signer = createUrlSigner('a'.repeat(64));
  const claims = { sid: 'pbs_1', assetId: 'ast_1', mode: 'hls' as const, exp: 2_000_000_000 };

  test('a token verifies until it expires, then never', () => {
    const token = signer.sign(claims);
    expect(signer.verify(token, 1_999_999_999_000)).toEqual(claims);
    expect(signer.verify(token, 2_000_000_000_000)).toBeNull();
  });

  test('a token signed under another secret, or altered, does not verify', () => {
    const token = createUrlSigner('b'.repeat(64)).sign(claims);
    expect(signer.verify(token, 0)).toBeNull();
    const mine = signer.sign(claims);
    const [body, sig] = mine.split('.');
    const other = Buffer.from(JSON.stringify(['pbs_1', 'ast_2', 'hls', 2_000_000_000])).toString('base64url');
    expect(signer.verify(`${other}.${sig}`, 0)).toBeNull();
    expect(signer.verify(`${body}.${sig}.x`, 0)).toBeNull();
  });
});
