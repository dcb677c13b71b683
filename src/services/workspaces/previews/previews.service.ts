// Preview links: a workspace port reached through Keel's preview listener (previews.proxy.ts) on a
// host name of its own, `<label>.<APP_PREVIEW_DOMAIN>`. The label is a random secret (its sha256 is
// stored), works without headers until it expires or is revoked, and is answered 410 from then on.
// Resolved links are kept in memory: this process is the only workspaces process of its database
// (Store.claim), so every revoke passes here and drops what it kept. Traffic through a link is
// recorded as the workspace's last activity, which the idle stop reads.
import { createHash, randomBytes } from 'node:crypto';
import { AppError } from '../../../platform/errors';
import type { Store } from '../../../platform/store';
import { newId, type Clock } from '../../../platform/runtime';
import type { Actor } from '../../../platform/auth/workspace-token';
import type { Access } from '../access';
import { PREVIEW_TTL_DEFAULT_S } from './previews.model';
import { KEELD_PORT } from '../engine/keeld';
import { createPreviewsRepository } from './previews.repository';
import type { PreviewRow } from './previews.tables';
import { WorkspaceErrors } from '../workspaces.errors';

/** Activity is written at most this often per workspace (a page load is dozens of requests). */
const ACTIVITY_WRITE_MS = 1000;
/** Links kept resolved in memory; past it the oldest is read again from the database when next used. */
const CACHE_MAX = 10_000;

const hash = (label: string) => createHash('sha256').update(label).digest('hex');

/** A label: 160 random bits as 40 lower-case hex digits, one DNS label (at most 63). */
export const LABEL = /^[0-9a-f]{40}$/;

/** A link as the proxy serves it; `revoked` turns true in place, so an open relay sees it. */
export interface PreviewLink {
  id: string;
  workspaceId: string;
  port: number;
  expiresAtMs: number;
  revoked: boolean;
}

export type PreviewTarget = { ok: true; link: PreviewLink } | { ok: false; error: AppError };

export function createPreviewsService(deps: {
  store: Store;
  clock: Clock;
  access: Pick<Access, 'getOwned' | 'engineReady'>;
  /** The URL of a label (APP_PREVIEW_PUBLIC_URL, else `http://<label>.<APP_PREVIEW_DOMAIN>:<port>/`). */
  urlOf: (label: string) => string;
  onActivity?: (workspaceId: string) => void;
  /** Hears every revoke at once (the proxy closes the link's WebSockets). */
  onRevoked?: (previewId: string) => void;
}) {
  const { clock } = deps;
  const repo = createPreviewsRepository(deps.store);
  const links = new Map<string, PreviewLink>();
  const lastWrite = new Map<string, number>();
  /** Counts revokes, so a link read while one ran is read again before it is kept. */
  let revokes = 0;
  const iso = (ms = clock.now()) => new Date(ms).toISOString();
  const view = (r: PreviewRow) => ({ id: r.id, port: r.port, url: r.url, expiresAt: r.expiresAt, ...(r.revokedAt ? { revoked: true } : {}) });

  const keep = (hashed: string, link: PreviewLink) => {
    if (links.size >= CACHE_MAX) links.delete(links.keys().next().value!);
    links.set(hashed, link);
  };

  return {
    async create(actor: Actor, workspaceId: string, input: { port: number; ttlSeconds?: number }) {
      const ws = deps.access.engineReady(await deps.access.getOwned(actor, workspaceId));
      // A link to a workspace that does not run would only answer 503: refused up front (CONTRACT.md).
      if (ws.status !== 'running') throw WorkspaceErrors.WORKSPACE_NOT_RUNNING(`the workspace is ${ws.status}; start it to preview it`, { status: ws.status });
      // keeld answers only Keel's token; a preview would put it in front of anyone holding the link.
      if (input.port === KEELD_PORT) throw WorkspaceErrors.INVALID_REQUEST(`port ${KEELD_PORT} is Keel's workspace daemon; it is not previewed`, { property: '/port' });
      const label = randomBytes(20).toString('hex');
      const now = clock.now();
      const row: PreviewRow = {
        id: newId('pv', clock),
        workspaceId,
        owner: actor.id,
        port: input.port,
        tokenHash: hash(label),
        url: deps.urlOf(label),
        expiresAt: iso(now + (input.ttlSeconds ?? PREVIEW_TTL_DEFAULT_S) * 1000),
        revokedAt: null,
        createdAt: iso(now),
      };
      await repo.insert(row);
      return view(row);
    },

    async list(actor: Actor, workspaceId: string) {
      await deps.access.getOwned(actor, workspaceId);
      return (await repo.list(workspaceId)).map(view);
    },

    /** Revokes at once: the next request through the link answers 410, its WebSockets are closed. */
    async revoke(actor: Actor, workspaceId: string, id: string) {
      await deps.access.getOwned(actor, workspaceId);
      const found = await repo.find(workspaceId, id);
      if (!found) throw WorkspaceErrors.PREVIEW_NOT_FOUND('preview not found');
      await repo.revoke(id, iso());
      revokes++;
      const kept = links.get(found.tokenHash);
      if (kept) kept.revoked = true;
      deps.onRevoked?.(id);
      return { id, revoked: true as const };
    },

    /** The link of a label, or why it serves nothing (404 unknown, 410 expired or revoked). One database read per link. */
    async resolve(label: string): Promise<PreviewTarget> {
      const hashed = hash(label);
      let link = links.get(hashed);
      while (!link) {
        const before = revokes;
        const row = await repo.byTokenHash(hashed);
        if (!row) return { ok: false, error: WorkspaceErrors.PREVIEW_NOT_FOUND('no such preview') };
        // A revoke that ran while this read was in flight may have found nothing kept to mark: read again.
        if (revokes !== before) continue;
        link = links.get(hashed) ?? { id: row.id, workspaceId: row.workspaceId, port: row.port, expiresAtMs: Date.parse(row.expiresAt), revoked: !!row.revokedAt };
        keep(hashed, link);
      }
      if (link.revoked) return { ok: false, error: WorkspaceErrors.PREVIEW_REVOKED('this preview link was revoked') };
      if (link.expiresAtMs <= clock.now()) return { ok: false, error: WorkspaceErrors.PREVIEW_EXPIRED('this preview link has expired') };
      return { ok: true, link };
    },

    /** Records traffic to the workspace (throttled): the idle stop counts it as activity. */
    touch(workspaceId: string) {
      // The idle stop's own clock (Lifecycle.touch): every request and frame counts.
      deps.onActivity?.(workspaceId);
      const now = clock.now();
      if (now - (lastWrite.get(workspaceId) ?? 0) < ACTIVITY_WRITE_MS) return;
      lastWrite.set(workspaceId, now);
      // Not awaited: a page's requests do not wait on this write, and a lost one is the next second's.
      repo.writeActivity(workspaceId, iso(now)).catch(() => undefined);
    },
  };
}

export type PreviewsService = ReturnType<typeof createPreviewsService>;
