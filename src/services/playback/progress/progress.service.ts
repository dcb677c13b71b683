// Watch state per actor: where each actor is in each asset, `played` past 90 % of its duration, and
// the actor's "continue watching" (started, not played). The asset is checked with the catalog over
// the bus (qry.catalog.playable), which also gives the duration.
import type { Principal } from '../../../platform/auth/access-token';
import type { Bus } from '../../../platform/bus/bus';
import type { Clock } from '../../../platform/runtime';
import { assetNotFound } from '../playback.service';
import type { ProgressItem } from './progress.model';
import type { ProgressRepository } from './progress.repository';
import type { ProgressRow } from './progress.tables';

/** Past this share of its duration an asset counts as played (Jellyfin's and Plex's default). */
export const PLAYED_AT = 0.9;

const toItem = (r: ProgressRow): ProgressItem => ({ assetId: r.assetId, positionMs: r.positionMs, played: r.played, updatedAt: r.updatedAt });

export function createProgress(deps: { bus: Bus; clock: Clock; repo: ProgressRepository }) {
  async function put(assetId: string, positionMs: number, by: Principal): Promise<ProgressItem> {
    const asset = await deps.bus.request('qry.catalog.playable', { assetId });
    if (!asset.found) throw assetNotFound();
    const durationMs = asset.durationMs;
    const position = durationMs > 0 ? Math.min(positionMs, durationMs) : positionMs;
    const row: ProgressRow = {
      actorId: by.actorId, assetId, positionMs: position, durationMs,
      played: durationMs > 0 && position >= durationMs * PLAYED_AT, updatedAt: deps.clock.now(),
    };
    await deps.repo.put(row);
    return toItem(row);
  }

  async function list(by: Principal, opts: { inProgress?: boolean; limit?: number }): Promise<ProgressItem[]> {
    return (await deps.repo.list(by.actorId, { inProgress: opts.inProgress ?? false, limit: opts.limit ?? 100 })).map(toItem);
  }

  return { put, list };
}

export type ProgressService = ReturnType<typeof createProgress>;
