/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
// Play: opens an HLS playback session for the asset (this origin's POST /sessions), plays it in a
// <video> through hls.js (a chunk loaded on the first Play; iOS Safari plays HLS itself), and draws the
// session's trickplay thumbnails (thumbnails.vtt beside the master playlist) over a seek bar of its
// own while a person drags it. Audio and subtitle choices appear when the stream offers them. Where
// the actor stopped is kept (PUT /progress every few seconds and on pause) and a later Play starts there.
import { call, messageOf, ProblemError } from './api';
import { fill, h, uid } from '../../../../platform/browser/dom';
import { request } from '../../../../platform/browser/request';
import { duration } from './format';

/** How often the place reached is saved while playing. */
const PROGRESS_EVERY_MS = 5000;

interface Cue {
  start: number;
  end: number;
  url: string;
  x: number;
  y: number;
  w: number;
  hgt: number;
}

/** The cues of a WebVTT thumbnails track: `start --> end` then `sprite.jpg#xywh=x,y,w,h`. */
function parseThumbnails(vtt: string, base: string): Cue[] {
  const seconds = (t: string) => t.split(':').reduce((a, p) => a * 60 + Number(p), 0);
  const cues: Cue[] = [];
  const lines = vtt.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const m = /^([\d:.]+)\s+-->\s+([\d:.]+)/.exec(lines[i]!);
    const ref = m && lines[i + 1] ? /^(.*)#xywh=(\d+),(\d+),(\d+),(\d+)$/.exec(lines[i + 1]!.trim()) : null;
    if (m && ref) cues.push({ start: seconds(m[1]!), end: seconds(m[2]!), url: new URL(ref[1]!, base).toString(), x: +ref[2]!, y: +ref[3]!, w: +ref[4]!, hgt: +ref[5]! });
  }
  return cues;
}

/** A session, once the sources service knows the asset (right after a scan it may not yet). */
async function openSession(assetId: string, signal: AbortSignal): Promise<{ id: string; url: string }> {
  for (let i = 0; ; i++) {
    try {
      return (await call<{ session: { id: string; url: string } }>('', 'POST', '/sessions', { assetId, mode: 'hls' }, signal)).session;
    } catch (e) {
      if (!(e instanceof ProblemError && e.code === 'PLAYBACK_SOURCE_UNAVAILABLE') || i >= 40) throw e;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

export async function playerFor(stage: HTMLElement, assetId: string, page: AbortSignal): Promise<void> {
  const video = h('video', { controls: true, playsinline: true, 'aria-label': 'Player' });
  const error = h('p', { role: 'alert', class: 'error' });
  const seek = h('input', { id: uid('seek'), type: 'range', min: '0', max: '0', step: '0.1', value: '0', 'aria-label': 'Seek' });
  const time = h('span', { class: 'note' }, '0:00');
  const thumb = h('div', { class: 'thumb', hidden: true, role: 'img', 'aria-label': 'Thumbnail at the seek position' });
  const choices = h('div', { class: 'row choices' });
  const resumeNote = h('p', { class: 'note', role: 'status' });
  fill(stage, video, h('div', { class: 'seekbar' }, thumb, seek, time), resumeNote, choices, error);
  try {
    const session = await openSession(assetId, page);
    const master = new URL(session.url, location.href);
    // The session URL's path on this origin (it is on this origin: the playback service's own URLs).
    const src = master.origin === location.origin ? master.pathname : master.toString();
    let hls: { destroy(): void } | undefined;
    // A browser that plays it unmuted only after a fresh gesture (the session took a moment) plays it muted.
    const start = () =>
      void video.play().catch(() => {
        video.muted = true;
        return video.play().catch(() => undefined);
      });
    const { default: Hls } = await import('hls.js');
    // hls.js wherever Media Source Extensions exist (it offers the audio and subtitle choices); the
    // browser's own HLS only where they do not (iOS Safari).
    if (!Hls.isSupported()) {
      if (!video.canPlayType('application/vnd.apple.mpegurl')) throw new Error('this browser cannot play HLS');
      video.src = src;
      start();
    } else {
      const player = new Hls({ enableWorker: true });
      hls = player;
      player.on(Hls.Events.ERROR, (_, data) => {
        if (data.fatal) error.textContent = `Playback failed: ${data.details}`;
      });
      const tracks = () => {
        const audio = player.audioTracks;
        const subs = player.subtitleTracks;
        const selects: HTMLElement[] = [];
        if (audio.length > 1) {
          const s = h('select', { id: uid('audio') }, audio.map((t, i) => h('option', { value: String(i), selected: i === player.audioTrack }, t.name || t.lang || `Track ${i + 1}`)));
          s.addEventListener('change', () => (player.audioTrack = Number(s.value)));
          selects.push(h('label', { for: s.id }, 'Audio'), s);
        }
        if (subs.length) {
          const s = h('select', { id: uid('subs') }, h('option', { value: '-1' }, 'Off'), subs.map((t, i) => h('option', { value: String(i), selected: i === player.subtitleTrack }, t.name || t.lang || `Subtitles ${i + 1}`)));
          s.addEventListener('change', () => (player.subtitleTrack = Number(s.value)));
          selects.push(h('label', { for: s.id }, 'Subtitles'), s);
        }
        fill(choices, selects);
      };
      player.on(Hls.Events.MANIFEST_PARSED, () => {
        tracks();
        start();
      });
      player.on(Hls.Events.AUDIO_TRACKS_UPDATED, tracks);
      player.on(Hls.Events.SUBTITLE_TRACKS_UPDATED, tracks);
      player.loadSource(src);
      player.attachMedia(video);
    }
    // Continue watching: start where the actor stopped (unless played to the end), and keep the place.
    const kept = await call<{ items: { assetId: string; positionMs: number; played: boolean }[] }>('', 'GET', '/progress?limit=500', undefined, page)
      .then((r) => r.items.find((i) => i.assetId === assetId))
      .catch(() => undefined);
    if (kept && !kept.played && kept.positionMs > 0) {
      const resume = () => (video.currentTime = kept.positionMs / 1000);
      if (video.readyState >= HTMLMediaElement.HAVE_METADATA) resume();
      else video.addEventListener('loadedmetadata', resume, { once: true });
      resumeNote.textContent = `Resuming at ${duration(kept.positionMs)}`;
    }
    let saved = -1;
    // The timer skips a move under a second; a pause or leaving the page keeps the exact place.
    const save = (exact = false) => {
      const positionMs = Math.floor(video.currentTime * 1000);
      if (!positionMs || positionMs === saved || (!exact && Math.abs(positionMs - saved) < 1000)) return;
      saved = positionMs;
      void call('', 'PUT', `/progress/${encodeURIComponent(assetId)}`, { positionMs }).catch(() => undefined);
    };
    const saver = setInterval(() => save(), PROGRESS_EVERY_MS);
    video.addEventListener('pause', () => save(true));
    page.addEventListener('abort', () => {
      save(true);
      clearInterval(saver);
      hls?.destroy();
      void call('', 'DELETE', `/sessions/${session.id}`).catch(() => undefined);
    }, { once: true });

    // The seek bar follows the video; dragging it shows the thumbnail of that moment, letting go seeks.
    const vttUrl = new URL('thumbnails.vtt', master).toString();
    const cues = await request(vttUrl, {}).then((r) => (r.ok ? r.text() : '')).then((t) => parseThumbnails(t, vttUrl)).catch(() => [] as Cue[]);
    let dragging = false;
    video.addEventListener('loadedmetadata', () => (seek.max = String(video.duration || 0)));
    video.addEventListener('timeupdate', () => {
      if (!dragging) seek.value = String(video.currentTime);
      time.textContent = duration(video.currentTime * 1000);
    });
    const show = (t: number) => {
      const cue = cues.find((c) => t >= c.start && t < c.end) ?? cues.at(-1);
      if (!cue) return;
      thumb.hidden = false;
      thumb.style.width = `${cue.w}px`;
      thumb.style.height = `${cue.hgt}px`;
      thumb.style.backgroundImage = `url("${cue.url}")`;
      thumb.style.backgroundPosition = `-${cue.x}px -${cue.y}px`;
      thumb.dataset.cue = `${cue.start}`;
      // Above the point of the bar it shows.
      const max = Number(seek.max) || 1;
      thumb.style.left = `${Math.max(0, Math.min(seek.offsetWidth - cue.w, (t / max) * seek.offsetWidth - cue.w / 2))}px`;
    };
    seek.addEventListener('input', () => {
      dragging = true;
      show(Number(seek.value));
    });
    seek.addEventListener('change', () => {
      video.currentTime = Number(seek.value);
      dragging = false;
      setTimeout(() => (thumb.hidden = true), 800);
    });
  } catch (e) {
    if (!page.aborted) error.textContent = messageOf(e);
  }
}
