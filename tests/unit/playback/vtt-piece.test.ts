// A subtitle rendition's per-segment WebVTT pieces: the header kept, the cues that overlap the segment.
import { describe, expect, test } from 'bun:test';
import { vttPiece, withTimestampMap } from '../../../src/services/playback/hls';

const VTT = 'WEBVTT\n\nSTYLE\n::cue { color: yellow }\n\n1\n00:00:00.500 --> 00:00:01.500\nOne\n\n00:02.000 --> 00:07.000 align:start\nLong\n\n3\n00:00:08.000 --> 00:00:09.000\nThree\n';

describe('vttPiece', () => {
  test('keeps the header and style, and only the cues overlapping the segment', () => {
    expect(vttPiece(VTT, 0, 2000)).toBe('WEBVTT\n\nSTYLE\n::cue { color: yellow }\n\n1\n00:00:00.500 --> 00:00:01.500\nOne\n');
  });

  test('a cue across a boundary is in both segments; a segment with no cue is the header alone', () => {
    expect(vttPiece(VTT, 6000, 12000)).toContain('Long');
    expect(vttPiece(VTT, 6000, 12000)).toContain('Three');
    expect(vttPiece(VTT, 12000, 18000)).toBe('WEBVTT\n\nSTYLE\n::cue { color: yellow }\n');
  });

  test('withTimestampMap puts X-TIMESTAMP-MAP right after the WEBVTT line', () => {
    expect(withTimestampMap('WEBVTT\n\n1\n00:00:00.500 --> 00:00:01.500\nOne\n')).toStartWith('WEBVTT\nX-TIMESTAMP-MAP=MPEGTS:900000,LOCAL:00:00:00.000\n\n1\n');
  });
});
