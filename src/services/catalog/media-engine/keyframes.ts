// Keyframe positions, fastest source first: the container's own index (Matroska Cues, MP4 sync
// samples), else a packet scan by ffprobe that reads packet flags without decoding.
import type { KeyframeSource } from '../../../platform/bus/media-shapes';
import type { Ffprobe } from './ffprobe';
import { openByteSource } from './file-reader';
import { matroskaCueKeyframes } from './matroska-cues';
import { mp4SyncKeyframes } from './mp4-index';

export async function containerIndexKeyframes(file: string, container: string): Promise<{ ms: number[]; source: KeyframeSource } | null> {
  let src: Awaited<ReturnType<typeof openByteSource>> | undefined;
  try {
    src = await openByteSource(file);
    if (container === 'mkv' || container === 'webm') {
      const ms = await matroskaCueKeyframes(src);
      return ms ? { ms, source: 'cues' } : null;
    }
    if (container === 'mp4' || container === 'mov' || container === 'm4a') {
      const ms = await mp4SyncKeyframes(src);
      return ms ? { ms, source: 'mp4-index' } : null;
    }
    return null;
  } catch {
    // A damaged index (or a file gone since the probe) is not an error of the probe: the packet scan still answers.
    return null;
  } finally {
    await src?.close();
  }
}

/** `frameRate` of the first video stream places packets that carry no timestamp at all. */
export async function keyframes(file: string, container: string, frameRate: number | null, ffprobe: Ffprobe): Promise<{ ms: number[]; source: KeyframeSource }> {
  if (frameRate === null) return { ms: [], source: 'none' };
  const fromIndex = await containerIndexKeyframes(file, container);
  if (fromIndex && fromIndex.ms.length > 0) return fromIndex;
  const scanned = await ffprobe.keyframePacketScan(file, frameRate);
  return scanned && scanned.length > 0 ? { ms: scanned, source: 'packet-scan' } : { ms: [], source: 'none' };
}
