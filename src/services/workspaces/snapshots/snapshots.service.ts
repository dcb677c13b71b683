// Snapshots of a workspace: its container's file system committed to an image (docker commit, the
// processes paused meanwhile) and its volume as a tar in the data dir. Both are made first and the
// row written last, so a crash of Keel at any point leaves only objects without a row, which
// start-up removes (reconcile). A delete always succeeds: the row goes at once (the quota slot is free,
// the snapshot is 404 and cannot be created from), and the objects go with it unless workspaces made
// from it still exist: they need its image (a container made again) and, until provisioned, its
// archive. Those are removed when the last such workspace is deleted (release).
import { createReadStream, createWriteStream, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { AppError } from '../../../platform/errors';
import type { Store } from '../../../platform/store';
import type { Actor } from '../../../platform/auth/workspace-token';
import { errorFields, isoNow, newId, type Clock, type Logger } from '../../../platform/runtime';
import { engineFailure, type Access } from '../access';
import { LABEL_INSTANCE, LABEL_MANAGED, LABEL_OWNER, LABEL_SNAPSHOT, type Engine } from '../engine/engine';
import { MOUNT_PATH } from '../lifecycle/stats';
import type { TaskQueue } from '../lifecycle/task-queue';
import type { SnapshotRow } from '../workspaces.tables';
import { WorkspaceErrors } from '../workspaces.errors';
import { createSnapshotsRepository } from './snapshots.repository';

/** Statuses a workspace can be snapshotted from: its container exists and is not being changed. */
const SNAPSHOT_FROM = ['running', 'paused', 'stopped'] as const;

export const snapshotNotFound = () => WorkspaceErrors.SNAPSHOT_NOT_FOUND('snapshot not found');

export function createSnapshots(deps: {
  store: Store;
  engine: Engine;
  access: Access;
  queue: TaskQueue;
  clock: Clock;
  log: Logger;
  instance: string;
  /** Where the volume archives are kept (`$APP_DATA_DIR/snapshots`). */
  dir: string;
  /** Snapshots a non-admin actor may hold (APP_QUOTA_SNAPSHOTS). */
  quota: number;
}) {
  const { store, engine, log, instance, dir } = deps;
  const records = createSnapshotsRepository(store);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const archive = (id: string) => join(dir, `${id}.tar`);
  const imageRef = (id: string) => `keel-snapshot:${id}`;

  const overQuota = () =>
    WorkspaceErrors.QUOTA_EXCEEDED(`at most ${deps.quota} snapshots per actor (APP_QUOTA_SNAPSHOTS); delete one first`, { quota: 'snapshots', limit: deps.quota });

  async function getOwned(actor: Actor, id: string): Promise<SnapshotRow> {
    const row = await records.get(id);
    if (!row || (!actor.admin && row.owner !== actor.id)) throw snapshotNotFound();
    return row;
  }

  /** Removes what a snapshot holds on the engine and the disk (each absent part is fine). */
  async function removeObjects(id: string, image: string) {
    await engine.removeImage(image);
    rmSync(archive(id), { force: true });
  }

  /** A deleted snapshot's image and archive, removed unless a workspace made from it still exists. */
  async function removeIfUnused(id: string) {
    if (await records.inUse(id)) return;
    await removeObjects(id, imageRef(id));
  }

  const view = (r: SnapshotRow) => ({ id: r.id, name: r.name, workspaceId: r.workspaceId, template: r.template, sizeBytes: r.sizeBytes, createdAt: r.createdAt });

  return {
    view,
    getOwned,

    list: (actor: Actor) => records.list(actor.admin ? undefined : actor.id),

    /**
     * Commits the workspace's container and archives its volume, on the workspace's queue (behind any
     * operation in flight, and no stop or delete meanwhile). 409 when the workspace has no settled
     * container, 429 past the quota (checked again just before the row is written).
     */
    async create(actor: Actor, workspaceId: string, name: string): Promise<SnapshotRow> {
      const ws = await deps.access.getOwned(actor, workspaceId);
      const refuse = (status: string) =>
        WorkspaceErrors.INVALID_TRANSITION(`cannot snapshot a workspace that is ${status}`, { status, operation: 'snapshot', allowedFrom: [...SNAPSHOT_FROM] });
      if (!(SNAPSHOT_FROM as readonly string[]).includes(ws.status)) throw refuse(ws.status);
      if (!actor.admin && (await records.countOf(ws.owner)) >= deps.quota) throw overQuota();
      let result: SnapshotRow | undefined;
      let failure: unknown;
      await deps.queue.enqueue(ws.id, async () => {
        const row = await deps.access.row(ws.id);
        if (!row || !(SNAPSHOT_FROM as readonly string[]).includes(row.status) || !row.containerId) {
          failure = row ? refuse(row.status) : snapshotNotFound();
          return;
        }
        const id = newId('snap', deps.clock);
        const image = imageRef(id);
        try {
          await engine.commit(row.containerId, image, { [LABEL_MANAGED]: 'true', [LABEL_INSTANCE]: instance, [LABEL_SNAPSHOT]: id, [LABEL_OWNER]: row.owner });
          await pipeline(await engine.getArchive(row.containerId, MOUNT_PATH), createWriteStream(archive(id), { mode: 0o600 }));
          const sizeBytes = ((await engine.imageSize(image)) ?? 0) + (await stat(archive(id))).size;
          // The quota again, under the owner's lock in the transaction of the insert: two snapshots at once cannot overshoot.
          const inserted = await records.insertWithin(
            { id, name, owner: row.owner, workspaceId: row.id, template: row.template, image, sizeBytes, createdAt: isoNow(deps.clock) },
            actor.admin ? null : deps.quota,
          );
          if (!inserted) throw overQuota();
          result = inserted;
        } catch (e) {
          await removeObjects(id, image).catch(() => {});
          failure = e instanceof AppError ? e : engineFailure(e);
        }
      });
      if (failure) throw failure;
      return result!;
    },

    /**
     * Removes the snapshot from the list at once (its quota slot is free), and its image and archive
     * unless workspaces made from it still exist (release removes them after the last one). Objects an
     * engine failure leaves are removed at the next start-up (reconcile).
     */
    async remove(actor: Actor, id: string): Promise<{ id: string; deleted: true }> {
      const row = await getOwned(actor, id);
      await records.delete(id);
      await removeIfUnused(row.id).catch((e) => log.warn('snapshot objects not removed; the next start-up removes them', { snapshot: row.id, ...errorFields(e) }));
      return { id, deleted: true };
    },

    /**
     * A workspace made from `snapshotId` is gone: a deleted snapshot's objects go with the last such
     * workspace (a snapshot still listed keeps them for its owner).
     */
    async release(snapshotId: string): Promise<void> {
      if (await records.get(snapshotId)) return;
      await removeIfUnused(snapshotId);
    },

    /**
     * The image a workspace made from `snapshotId` runs: the snapshot's, kept after a delete while the
     * workspace exists; null once it is gone from the engine.
     */
    async image(snapshotId: string): Promise<string | null> {
      const row = await records.get(snapshotId);
      if (row) return row.image;
      return (await engine.imageSize(imageRef(snapshotId))) === null ? null : imageRef(snapshotId);
    },

    /** Copies the snapshot's volume archive into a created container's volume (before its first start). */
    async restoreVolume(containerId: string, snapshotId: string): Promise<void> {
      await engine.putArchive(containerId, dirname(MOUNT_PATH), createReadStream(archive(snapshotId)));
    },

    /**
     * Start-up: a row whose image the engine lost goes (it cannot be started from); an image or an
     * archive of this instance without a row (a crash mid-snapshot or mid-delete) is removed.
     */
    async reconcile(): Promise<void> {
      let images: { ref: string; snapshotId: string }[];
      try {
        images = await engine.listSnapshotImages(instance);
      } catch (e) {
        log.warn('the engine did not list snapshot images; snapshot clean-up skipped', errorFields(e));
        return;
      }
      const onEngine = new Set(images.map((i) => i.snapshotId));
      for (const row of await records.list()) {
        if (onEngine.has(row.id)) continue;
        log.warn('removing a snapshot whose image is gone from the engine', { snapshot: row.id });
        rmSync(archive(row.id), { force: true });
        await records.delete(row.id);
      }
      // Kept: what a listed snapshot holds, and what a deleted one's workspaces still run from.
      const known = new Set((await records.list()).map((r) => r.id));
      for (const id of await records.inUseIds()) known.add(id);
      for (const i of images) {
        if (known.has(i.snapshotId)) continue;
        log.warn('removing a snapshot image no snapshot owns', { image: i.ref });
        await engine.removeImage(i.ref).catch((e) => log.warn('snapshot image removal failed', errorFields(e)));
      }
      for (const f of readdirSync(dir)) {
        const id = f.replace(/\.tar$/, '');
        if (!known.has(id)) rmSync(join(dir, f), { force: true });
      }
    },
  };
}

export type Snapshots = ReturnType<typeof createSnapshots>;
