// Playlists from the keyframe index: segments of about the target length whose every boundary is an
// indexed keyframe, so a seek (which lands on a segment start) always lands on a keyframe.

export interface Segment {
  index: number;
  startMs: number;
  endMs: number;
}

/**
 * Cuts [0, durationMs) at keyframes: each boundary is the keyframe nearest to the previous boundary
 * plus `targetMs`. Without keyframes (audio only) any point will do, so the cut is a plain grid.
 */
export function cutSegments(keyframesMs: number[], durationMs: number, targetMs: number): Segment[] {
  const bounds = [0];
  if (keyframesMs.length === 0) {
    for (let t = targetMs; t < durationMs; t += targetMs) bounds.push(t);
  } else {
    const keys = keyframesMs.filter((k) => k > 0 && k < durationMs);
    let i = 0;
    while (i < keys.length) {
      const want = bounds[bounds.length - 1]! + targetMs;
      while (i < keys.length && keys[i]! < want) i++;
      // keys[i] is the first at or after `want`; the one before it may be nearer.
      const after = keys[i];
      const before = keys[i - 1];
      const last = bounds[bounds.length - 1]!;
      const pick = after === undefined ? undefined : before !== undefined && before > last && want - before < after - want ? before : after;
      if (pick === undefined) break;
      bounds.push(pick);
      i = keys.indexOf(pick) + 1;
    }
  }
  // A last piece much shorter than the target joins the one before it.
  if (bounds.length > 1 && durationMs - bounds[bounds.length - 1]! < targetMs / 4) bounds.pop();
  return bounds.map((startMs, index) => ({ index, startMs, endMs: bounds[index + 1] ?? durationMs }));
}

/** The master playlist: one variant, the media playlist beside it. */
export function masterPlaylist(opts: { bandwidthBps: number; width?: number; height?: number }): string {
  const resolution = opts.width && opts.height ? `,RESOLUTION=${opts.width}x${opts.height}` : '';
  return ['#EXTM3U', '#EXT-X-VERSION:3', `#EXT-X-STREAM-INF:BANDWIDTH=${Math.max(1, Math.round(opts.bandwidthBps))}${resolution}`, 'media.m3u8', ''].join('\n');
}

/** A VOD media playlist of the segments; names end in .ts as strict clients require. */
export function mediaPlaylist(segments: Segment[]): string {
  const longest = Math.max(1, ...segments.map((s) => Math.ceil((s.endMs - s.startMs) / 1000)));
  const lines = ['#EXTM3U', '#EXT-X-VERSION:3', `#EXT-X-TARGETDURATION:${longest}`, '#EXT-X-MEDIA-SEQUENCE:0', '#EXT-X-PLAYLIST-TYPE:VOD'];
  for (const s of segments) lines.push(`#EXTINF:${((s.endMs - s.startMs) / 1000).toFixed(3)},`, `segment-${s.index}.ts`);
  lines.push('#EXT-X-ENDLIST', '');
  return lines.join('\n');
}
