// The media type and file name of a direct session's answer, from the catalog's container name.
import { describe, expect, test } from 'bun:test';
import { contentDisposition, directFormat } from '../../../src/services/playback/media-types';

describe('directFormat', () => {
  test('video containers answer their video type and extension', () => {
    expect(directFormat('mp4', true)).toEqual({ ext: 'mp4', type: 'video/mp4' });
    expect(directFormat('mkv', true)).toEqual({ ext: 'mkv', type: 'video/x-matroska' });
    expect(directFormat('webm', true)).toEqual({ ext: 'webm', type: 'video/webm' });
    expect(directFormat('mov', true)).toEqual({ ext: 'mov', type: 'video/quicktime' });
  });

  test('a container without video answers its audio type', () => {
    expect(directFormat('mp4', false)).toEqual({ ext: 'm4a', type: 'audio/mp4' });
    expect(directFormat('mkv', false)).toEqual({ ext: 'mka', type: 'audio/x-matroska' });
    expect(directFormat('ogg', false)).toEqual({ ext: 'ogg', type: 'audio/ogg' });
  });

  test('audio containers stay audio when cover art shows as a video stream', () => {
    expect(directFormat('mp3', true)).toEqual({ ext: 'mp3', type: 'audio/mpeg' });
    expect(directFormat('m4a', true)).toEqual({ ext: 'm4a', type: 'audio/mp4' });
    expect(directFormat('flac', true)).toEqual({ ext: 'flac', type: 'audio/flac' });
  });

  test('a raw ffprobe demuxer list is read by its first name, and an unknown one is octet-stream', () => {
    expect(directFormat('matroska,webm', true).type).toBe('video/x-matroska');
    expect(directFormat('unknown', true)).toEqual({ ext: 'bin', type: 'application/octet-stream' });
  });
});

describe('contentDisposition', () => {
  test('the name keeps its stem and takes the served extension', () => {
    expect(contentDisposition('Clip (2020).mov', 'mov')).toBe(`inline; filename="Clip (2020).mov"; filename*=UTF-8''Clip%20(2020).mov`);
    expect(contentDisposition('Misnamed.bin', 'mkv')).toStartWith('inline; filename="Misnamed.mkv"');
  });

  test('quotes and non-ASCII letters never break the header; the UTF-8 form keeps them', () => {
    const h = contentDisposition('Amélie "le film".mkv', 'mkv');
    expect(h).toStartWith('inline; filename="Amelie _le film_.mkv"');
    expect(h).toContain(`filename*=UTF-8''${encodeURIComponent('Amélie "le film".mkv')}`);
    expect(() => new Headers({ 'content-disposition': h })).not.toThrow();
  });
});
