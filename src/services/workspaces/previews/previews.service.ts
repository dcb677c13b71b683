// Preview links: a workspace port reached through Keel's preview listener (previews.proxy.ts). A link
// carries a random secret in its path (its sha256 is stored), works without headers until it expires
// or is revoked, and is answered 410 from then on. Traffic through a link is recorded as the
// workspace's last activity, which the idle stop reads.
import { createHash, randomBytes } from 'node:crypto';
import { and, desc, eq, isNull } from 'drizzle-orm';
import { AppError } from '../../../platform/errors';
import type { Store } from '../../../platform/store';
import { newId, type Clock } from '../../../platform/runtime';
import type { Actor } from '../../../platform/auth/workspace-token';
import type { Access } from '../access';
import { PREVIEW_TTL_DEFAULT_S } from './previews.model';
import { previewsTables, type PreviewRow } from './previews.tables';

/** Activity is written at most this often per workspace (a page load is dozens of requests). */
const ACTIVITY_WRITE_MS = 1000;

const hash = (token: string) => createHash('sha256').update(token).digest('hex');

export type PreviewTarget =
  | { ok: true; workspaceId: string; port: number }
  | { ok: false; error: AppError };

export function createPreviewsService(deps: { store: Store; clock: Clock; access: Pick<Access, 'getOwned' | 'row'>; baseUrl: () => string; onActivity?: (workspaceId: string) => void }) {
  const { clock } = deps;
  const db = deps.store.orm;
  const { workspaceActivity, workspacePreviews } = previewsTables(deps.store.dialect);
  const lastWrite = new Map<string, number>();
  const iso = (ms = clock.now()) => new Date(ms).toISOString();
  const view = (r: PreviewRow) => ({ id: r.id, port: r.port, url: r.url, expiresAt: r.expiresAt, ...(r.revokedAt ? { revoked: true } : {}) });

  return {
    async create(actor: Actor, workspaceId: string, input: { port: number; ttlSeconds?: number }) {
      await deps.access.getOwned(actor, workspaceId);
      // Lower-case hex: the secret also fits a host name label, should a host form come later.
      const token = randomBytes(20).toString('hex');
      const now = clock.now();
      const row: PreviewRow = {
        id: newId('pv', clock),
        workspaceId,
        owner: actor.id,
        port: input.port,
        tokenHash: hash(token),
        url: `${deps.baseUrl()}/p/${token}/`,
        expiresAt: iso(now + (input.ttlSeconds ?? PREVIEW_TTL_DEFAULT_S) * 1000),
        revokedAt: null,
        createdAt: iso(now),
      };
      await db.insert(workspacePreviews).values(row);
      return view(row);
    },

    async list(actor: Actor, workspaceId: string) {
      await deps.access.getOwned(actor, workspaceId);
      return (await db.select().from(workspacePreviews).where(eq(workspacePreviews.workspaceId, workspaceId)).orderBy(desc(workspacePreviews.createdAt)).limit(500)).map(view);
    },

    /** Revokes at once: the next request through the link answers 410. */
    async revoke(actor: Actor, workspaceId: string, id: string) {
      await deps.access.getOwned(actor, workspaceId);
      const [found] = await db.select().from(workspacePreviews).where(and(eq(workspacePreviews.id, id), eq(workspacePreviews.workspaceId, workspaceId)));
      if (!found) throw new AppError('PREVIEW_NOT_FOUND', 'preview not found');
      await db.update(workspacePreviews).set({ revokedAt: iso() }).where(and(eq(workspacePreviews.id, id), isNull(workspacePreviews.revokedAt)));
      return { id, revoked: true as const };
    },

    /** The target of a link's secret, or why it serves nothing (404 unknown, 410 expired or revoked). */
    async resolve(token: string): Promise<PreviewTarget> {
      const [row] = await db.select().from(workspacePreviews).where(eq(workspacePreviews.tokenHash, hash(token)));
      if (!row || !(await deps.access.row(row.workspaceId))) return { ok: false, error: new AppError('PREVIEW_NOT_FOUND', 'no such preview') };
      if (row.revokedAt) return { ok: false, error: new AppError('PREVIEW_REVOKED', 'this preview link was revoked') };
      if (Date.parse(row.expiresAt) <= clock.now()) return { ok: false, error: new AppError('PREVIEW_EXPIRED', 'this preview link has expired') };
      return { ok: true, workspaceId: row.workspaceId, port: row.port };
    },

    /** Records traffic to the workspace (throttled): the idle stop counts it as activity. */
    touch(workspaceId: string) {
      // The idle stop's own clock (Lifecycle.touch): every request and frame counts.
      deps.onActivity?.(workspaceId);
      const now = clock.now();
      if (now - (lastWrite.get(workspaceId) ?? 0) < ACTIVITY_WRITE_MS) return;
      lastWrite.set(workspaceId, now);
      const at = iso(now);
      // Not awaited: a page's requests do not wait on this write, and a lost one is the next second's.
      void Promise.resolve(
        db.insert(workspaceActivity).values({ workspaceId, lastActivityAt: at }).onConflictDoUpdate({ target: workspaceActivity.workspaceId, set: { lastActivityAt: at } }),
      ).catch(() => undefined);
    },

  };
}

export type PreviewsService = ReturnType<typeof createPreviewsService>;
