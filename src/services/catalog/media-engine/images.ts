// The catalog's only ffmpeg: a work's images, an embedded cover taken out of its medium or an image
// resized to a width, each made once into a cache (APP_DATA_DIR/catalog-images) and served from it.
// Bounded like ffprobe: a cap on running processes, a timeout, and ffmpeg reading the one file it is
// given (file protocol only; an image is read by its own single-image demuxer, never image2 patterns).
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { extname, join } from 'node:path';
import { CatalogErrors } from '../catalog.errors';
import { createBoundedQueue } from '../../../platform/bounded-queue';
import { demuxerWhitelist } from './ffprobe';

export interface ImageEngineOptions {
  ffmpegPath: string;
  cacheDir: string;
  concurrency: number;
  timeoutMs: number;
}

const IMAGE_DEMUXERS: Record<string, string> = { jpg: 'jpeg_pipe', jpeg: 'jpeg_pipe', png: 'png_pipe', webp: 'webp_pipe' };
export const IMAGE_TYPES: Record<string, string> = { jpg: 'image/jpeg', jpeg: 'image/jpeg', png: 'image/png', webp: 'image/webp' };

const imageFailed = () => CatalogErrors.CATALOG_IMAGE_UNREADABLE('The image could not be read');
const busy = () => CatalogErrors.MEDIA_ENGINE_BUSY('too many images are being made; retry later');

export function createImageEngine(opts: ImageEngineOptions) {
  const gate = createBoundedQueue({ concurrency: opts.concurrency, maxWaiting: 64 });
  const inflight = new Map<string, Promise<string>>();
  // A medium is opened as ffprobe opens it: never by a demuxer that reads other files (playlists, concat).
  let formats: Promise<string> | undefined;
  const allowedFormats = () => (formats ??= demuxerWhitelist(opts.ffmpegPath).catch((e) => {
    formats = undefined;
    throw e;
  }));

  async function run(args: string[], out: string): Promise<void> {
    const ticket = gate.admit();
    if (!ticket) throw busy();
    await ticket.run(async () => {
      const tmp = `${out}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp.jpg`;
      const proc = Bun.spawn([opts.ffmpegPath, '-hide_banner', '-loglevel', 'error', '-nostdin', '-y', '-protocol_whitelist', 'file', ...args, '-f', 'image2', '-update', '1', tmp], {
        stdin: 'ignore', stdout: 'ignore', stderr: 'ignore',
      });
      const timer = setTimeout(() => proc.kill('SIGKILL'), opts.timeoutMs);
      const code = await proc.exited;
      clearTimeout(timer);
      if (code !== 0 || !existsSync(tmp)) {
        rmSync(tmp, { force: true });
        throw imageFailed();
      }
      renameSync(tmp, out);
    });
  }

  /** The cached file for `parts`, made by `make` once however many ask at the same time. */
  function cached(parts: string[], make: (out: string) => Promise<void>): Promise<string> {
    const name = createHash('sha256').update(parts.join('\0')).digest('hex').slice(0, 32) + '.jpg';
    const out = join(opts.cacheDir, name);
    if (existsSync(out)) return Promise.resolve(out);
    let pending = inflight.get(out);
    if (!pending) {
      mkdirSync(opts.cacheDir, { recursive: true });
      pending = make(out).then(() => out).finally(() => inflight.delete(out));
      inflight.set(out, pending);
    }
    return pending;
  }

  const signature = (abs: string) => {
    const st = statSync(abs);
    return `${abs}|${st.size}|${Math.trunc(st.mtimeMs)}`;
  };

  return {
    /** The attached picture `stream` of the medium at `abs`, as a JPEG (a width scales it). */
    cover(abs: string, stream: number, width?: number): Promise<string> {
      const scale = width ? ['-vf', `scale=${width}:-2`] : [];
      return cached([signature(abs), `cover${stream}`, String(width ?? 0)], async (out) =>
        run(['-format_whitelist', await allowedFormats(), '-i', `file:${abs}`, '-map', `0:${stream}`, '-frames:v', '1', ...scale, '-c:v', 'mjpeg', '-q:v', '3'], out),
      );
    },
    /** The image at `abs` scaled to `width` (the height keeps its ratio), as a JPEG. */
    resized(abs: string, width: number): Promise<string> {
      const demuxer = IMAGE_DEMUXERS[extname(abs).slice(1).toLowerCase()];
      if (!demuxer) return Promise.reject(imageFailed());
      return cached([signature(abs), 'w', String(width)], (out) =>
        run(['-f', demuxer, '-i', `file:${abs}`, '-frames:v', '1', '-vf', `scale=${width}:-2`, '-c:v', 'mjpeg', '-q:v', '3'], out),
      );
    },
  };
}

export type ImageEngine = ReturnType<typeof createImageEngine>;
