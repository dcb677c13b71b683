// Playback rules, free of HTTP: sessions (a signed URL per session, a row that can end it before it
// expires, and the identity session it follows), the file of a direct session,
// the playlists of an HLS session cut at the asset's indexed keyframes, and its segments, each made
// once by a workers job and served from the cache. It meets the catalog, the sources and the workers
// on the bus only (qry.catalog.playable, qry.sources.resolve, cmd.workers.submit, qry.workers.job).
import { realpathSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { Principal } from '../../platform/auth/access-token';
import type { SessionState } from '../../platform/auth/session-check';
import type { Bus } from '../../platform/bus/bus';
import type { JobSubmission, PlayableAsset, PlaybackSegmentJob, SourceBinding } from '../../platform/bus/subjects';
import { AppError } from '../../platform/errors';
import { isInside } from '../../platform/paths';
import { newId, type Clock, type Logger } from '../../platform/runtime';
import { cutSegments, masterPlaylist, mediaPlaylist, RUNG_KBPS, subtitlesPlaylist, vttPiece, withTimestampMap, type Segment } from './hls';
import { hlsPlan, prefixOf, segmentMethod, type Rendition } from './renditions';
import { contentDisposition, directFormat } from './media-types';
import type { PlaybackConfig } from './playback.config';
import type { EndedPlaybackSession, PlaybackSession } from './playback.model';
import type { PlaybackRepository } from './playback.repository';
import type { SegmentCache } from './segment-cache';
import { spritePlan, thumbnailsVtt } from './trickplay';
import type { UrlSigner } from './url-token';
import { PlaybackErrors } from './playback.errors';

export const assetNotFound = () => PlaybackErrors.PLAYBACK_ASSET_NOT_FOUND('No such asset');
export const noCapabilities = () => PlaybackErrors.PLAYBACK_NO_CAPABILITIES('The asset has no media index (indexed=false): there is nothing to play');
export const sourceUnavailable = () => PlaybackErrors.PLAYBACK_SOURCE_UNAVAILABLE('No readable copy of the asset is available now');
export const sessionNotFound = () => PlaybackErrors.PLAYBACK_SESSION_NOT_FOUND('No such playback session, or it has expired');
export const sessionEnded = () =>
  PlaybackErrors.PLAYBACK_SESSION_ENDED('The playback session has ended: it was deleted, or the identity session that opened it was revoked');
export const segmentNotFound = () => PlaybackErrors.PLAYBACK_SEGMENT_NOT_FOUND('No such segment in this playlist');
export const noThumbnails = () => PlaybackErrors.PLAYBACK_THUMBNAILS_NOT_FOUND('The asset has no video to make thumbnails of');
export const renditionNotFound = () => PlaybackErrors.PLAYBACK_RENDITION_NOT_FOUND('No such rendition in this master playlist');
export const segmentFailed = (why: string) => PlaybackErrors.PLAYBACK_SEGMENT_FAILED(`The segment could not be made (${why}); ask again`);

export interface PlaybackDeps {
  bus: Bus;
  clock: Clock;
  log: Logger;
  config: PlaybackConfig;
  signer: UrlSigner;
  cache: SegmentCache;
  repo: PlaybackRepository;
  /** Is the identity session that opened a playback session still live (qry.identity.session, briefly cached). */
  checkSession: (sid: string, sub: string) => Promise<SessionState>;
}

interface Located {
  asset: PlayableAsset;
  binding: SourceBinding;
}

export function createPlayback(deps: PlaybackDeps) {
  const { bus, clock, config, signer, cache, repo } = deps;
  // Facts and bindings change only on a rescan: a few seconds of reuse spares two bus round trips per segment.
  const located = new Map<string, { at: number; value: Located }>();
  const inflight = new Map<string, Promise<string>>();

  async function locate(assetId: string): Promise<Located> {
    const hit = located.get(assetId);
    if (hit && clock.now() - hit.at < 5000) return hit.value;
    const asset = await bus.request('qry.catalog.playable', { assetId });
    if (!asset.found) throw assetNotFound();
    if (!asset.indexed) throw noCapabilities();
    const { binding } = await bus.request('qry.sources.resolve', { assetId });
    if (!binding || !binding.available) throw sourceUnavailable();
    const value = { asset, binding };
    located.set(assetId, { at: clock.now(), value });
    return value;
  }

  /**
   * The claims of a session URL's token, while its session lasts: a well-signed, unexpired token of
   * this mode whose row is there (404 otherwise, all alike), not ended by DELETE and whose identity
   * session is live (410 otherwise). The row is read on every request, so a DELETE holds at once on
   * every replica; the identity answer is cached for 2 s, so a revocation holds within that.
   */
  async function claimsOf(token: string, mode: 'direct' | 'hls') {
    const claims = signer.verify(token, clock.now());
    if (!claims || claims.mode !== mode) throw sessionNotFound();
    const row = await repo.find(claims.sid);
    if (!row) throw sessionNotFound();
    if (row.endedAt !== null) throw sessionEnded();
    if (!(await deps.checkSession(row.identitySessionId, row.actorId)).live) throw sessionEnded();
    return claims;
  }

  async function createSession(input: { assetId: string; mode?: 'direct' | 'hls' }, baseUrl: string, by: Principal): Promise<PlaybackSession> {
    const mode = input.mode ?? 'hls';
    const { asset } = await locate(input.assetId);
    const id = newId('pbs', clock);
    const exp = Math.floor(clock.now() / 1000) + config.sessionTtlS;
    await repo.insert({
      id, actorId: by.actorId, identitySessionId: by.sessionId, assetId: input.assetId, mode,
      createdAt: clock.now(), expiresAt: exp * 1000, endedAt: null,
    });
    const token = signer.sign({ sid: id, assetId: input.assetId, mode, exp });
    const hasVideo = asset.streams.some((s) => s.type === 'video');
    const file = mode === 'hls' ? 'master.m3u8' : `file.${directFormat(asset.container, hasVideo).ext}`;
    return { id, assetId: input.assetId, mode, url: `${baseUrl}/play/${token}/${file}`, expiresAt: exp * 1000 };
  }

  /** Ends a session now: its URL answers 410 from the next request on. Only its actor; others are told it does not exist. */
  async function endSession(id: string, by: Principal): Promise<EndedPlaybackSession> {
    const row = await repo.find(id);
    if (!row || row.actorId !== by.actorId) throw sessionNotFound();
    const ended = (await repo.end(id, clock.now())) ?? row;
    if (row.endedAt === null) deps.log.info('playback session ended', { sessionId: id });
    return { id: ended.id, assetId: ended.assetId, mode: ended.mode, expiresAt: ended.expiresAt, endedAt: ended.endedAt ?? clock.now() };
  }

  /** Forgets sessions whose URL expired more than a day ago. */
  async function sweep(): Promise<void> {
    await repo.sweep(clock.now() - 86_400_000);
  }

  /** The file of a direct session, confined to its media root. */
  async function directFile(token: string): Promise<{ path: string; size: number; type: string; disposition: string }> {
    const { assetId } = await claimsOf(token, 'direct');
    const { asset, binding } = await locate(assetId);
    const base = config.mediaRoots[binding.root];
    if (base === undefined) throw sourceUnavailable();
    try {
      const root = realpathSync(base);
      const path = realpathSync(join(root, binding.path));
      if (!isInside(root, path)) throw sourceUnavailable();
      const format = directFormat(asset.container, asset.streams.some((s) => s.type === 'video'));
      return { path, size: statSync(path).size, type: format.type, disposition: contentDisposition(basename(binding.path), format.ext) };
    } catch (e) {
      if (e instanceof AppError) throw e;
      throw sourceUnavailable();
    }
  }

  async function segmentsOf(token: string): Promise<{ located: Located; segments: Segment[] }> {
    const { assetId } = await claimsOf(token, 'hls');
    const loc = await locate(assetId);
    return { located: loc, segments: cutSegments(loc.asset.keyframesMs, loc.asset.durationMs, config.segmentTargetMs) };
  }

  async function master(token: string): Promise<string> {
    const { located: l } = await segmentsOf(token);
    return masterPlaylist(hlsPlan(l.asset));
  }

  /** The rendition a playlist or segment name points at, if the asset's plan has it. */
  function checkRendition(l: Located, r: Rendition): void {
    if (r.kind === 'source') return;
    const plan = hlsPlan(l.asset);
    const ok = r.kind === 'rung' ? plan.variants.some((v) => v.height === r.height) : plan.audio.some((a) => a.stream === r.stream && !a.muxed);
    if (!ok) throw renditionNotFound();
  }

  async function media(token: string, r: Rendition = { kind: 'source' }): Promise<string> {
    const { located: l, segments } = await segmentsOf(token);
    checkRendition(l, r);
    return mediaPlaylist(segments, prefixOf(r));
  }

  async function subtitleOf(token: string, n: number) {
    const { assetId } = await claimsOf(token, 'hls');
    const l = await locate(assetId);
    const sub = hlsPlan(l.asset).subtitles[n];
    if (!sub) throw renditionNotFound();
    return { l, sub };
  }

  async function subtitles(token: string, n: number): Promise<string> {
    const { l } = await subtitleOf(token, n);
    return subtitlesPlaylist(n, cutSegments(l.asset.keyframesMs, l.asset.durationMs, config.segmentTargetMs));
  }

  /** The WebVTT of a subtitle rendition, whole or (`index`) the cues of one segment, made (once) by a workers job on first request. */
  async function subtitlesVtt(token: string, n: number, index?: number): Promise<string> {
    const { l, sub } = await subtitleOf(token, n);
    const seg = index === undefined ? undefined : cutSegments(l.asset.keyframesMs, l.asset.durationMs, config.segmentTargetMs)[index];
    if (index !== undefined && !seg) throw segmentNotFound();
    const key = cache.key(l.asset.assetId, `subtitles-${sub.stream !== undefined ? `s${sub.stream}` : Bun.hash(sub.file ?? '').toString(36)}.vtt`);
    if (!cache.has(key)) {
      let pending = inflight.get(key);
      if (!pending) {
        const payload = { assetId: l.asset.assetId, root: l.binding.root, path: l.binding.path, stream: sub.stream, file: sub.file, output: key };
        pending = make(key, { type: 'playback.subtitles', payload, key: `playback:${key}`, maxAttempts: 1 }).finally(() => inflight.delete(key));
        inflight.set(key, pending);
      }
      await pending;
    }
    cache.touch(key);
    const vtt = await Bun.file(cache.pathOf(key)).text();
    return withTimestampMap(seg ? vttPiece(vtt, seg.startMs, seg.endMs) : vtt);
  }

  /** Waits for the job to write the file `key` of the cache; fails when the job ends without it. */
  async function make(key: string, submission: JobSubmission): Promise<string> {
    const { job } = await bus.request('cmd.workers.submit', submission);
    const deadline = clock.now() + config.segmentWaitMs;
    let nextCheck = clock.now() + 200;
    for (;;) {
      if (cache.has(key)) {
        cache.evict(key);
        return key;
      }
      if (clock.now() > deadline) throw segmentFailed('it took too long');
      if (clock.now() >= nextCheck) {
        const { job: now } = await bus.request('qry.workers.job', { id: job.id });
        if (cache.has(key)) continue;
        if (now.status === 'failed' || now.status === 'cancelled' || now.status === 'done') throw segmentFailed(now.error ?? `the job ended ${now.status}`);
        nextCheck = clock.now() + 200;
      }
      await Bun.sleep(10);
    }
  }

  /** The cache key of a segment of rendition `r`, made (once, however many ask at the same time) if it is not there. */
  function ensure(l: Located, seg: Segment, r: Rendition): Promise<string> {
    const audio = r.kind === 'audio' ? l.asset.streams.find((s) => s.index === r.stream) : undefined;
    const firstAudio = l.asset.streams.find((s) => s.type === 'audio');
    const method = r.kind === 'source' ? segmentMethod(l.asset) : r.kind === 'audio' ? (audio?.codec === 'aac' ? 'copy' : 'transcode') : !firstAudio || firstAudio.codec === 'aac' ? 'copy' : 'transcode';
    const tag = r.kind === 'source' ? '' : r.kind === 'rung' ? `-h${r.height}` : `-a${r.stream}`;
    const key = cache.key(l.asset.assetId, `${seg.startMs}-${seg.endMs}-${method}${tag}.ts`);
    if (cache.has(key)) return Promise.resolve(key);
    let pending = inflight.get(key);
    if (!pending) {
      const payload: PlaybackSegmentJob = {
        assetId: l.asset.assetId, root: l.binding.root, path: l.binding.path, index: seg.index,
        startMs: seg.startMs, endMs: seg.endMs, method, output: key,
        ...(r.kind === 'rung' ? { height: r.height, videoKbps: RUNG_KBPS[r.height] } : r.kind === 'audio' ? { audioStream: r.stream } : {}),
      };
      // One attempt per job: a segment that failed is made again by the next request, not after a backoff.
      pending = make(key, { type: 'playback.segment', payload, key: `playback:${key}`, maxAttempts: 1 }).finally(() => inflight.delete(key));
      inflight.set(key, pending);
    }
    return pending;
  }

  /** The path of segment `index` of rendition `r`, made on first request; the next ones are started meanwhile. */
  async function segment(token: string, index: number, r: Rendition = { kind: 'source' }): Promise<string> {
    const { located: l, segments } = await segmentsOf(token);
    checkRendition(l, r);
    const seg = segments[index];
    if (!seg) throw segmentNotFound();
    const key = await ensure(l, seg, r);
    cache.touch(key);
    for (const next of segments.slice(index + 1, index + 1 + config.segmentsAhead)) {
      ensure(l, next, r).catch((e) => deps.log.debug('segment made ahead failed', { index: next.index, error: String(e) }));
    }
    return cache.pathOf(key);
  }

  /** The trickplay sprite of an HLS session's asset, made (once) on first request. */
  async function sprite(token: string): Promise<string> {
    const { assetId } = await claimsOf(token, 'hls');
    const l = await locate(assetId);
    const plan = spritePlan(l.asset, config.thumbnailIntervalS);
    if (!plan) throw noThumbnails();
    const key = cache.key(assetId, `thumbnails-${plan.intervalS}s-${plan.width}x${plan.height}.jpg`);
    if (!cache.has(key)) {
      let pending = inflight.get(key);
      if (!pending) {
        const { count: _, ...layout } = plan;
        const payload = { assetId, root: l.binding.root, path: l.binding.path, ...layout, output: key };
        pending = make(key, { type: 'playback.thumbnails', payload, key: `playback:${key}`, maxAttempts: 1 }).finally(() => inflight.delete(key));
        inflight.set(key, pending);
      }
      await pending;
    }
    cache.touch(key);
    return cache.pathOf(key);
  }

  /** The WebVTT of thumbnail cues; the sprite is started at once, as a player asks for it next. */
  async function thumbnails(token: string): Promise<string> {
    const { assetId } = await claimsOf(token, 'hls');
    const l = await locate(assetId);
    const plan = spritePlan(l.asset, config.thumbnailIntervalS);
    if (!plan) throw noThumbnails();
    sprite(token).catch((e) => deps.log.debug('thumbnails made ahead failed', { error: String(e) }));
    return thumbnailsVtt(plan, l.asset.durationMs, 'thumbnails.jpg');
  }

  return { createSession, endSession, sweep, directFile, master, media, subtitles, subtitlesVtt, segment, sprite, thumbnails };
}

export type Playback = ReturnType<typeof createPlayback>;
