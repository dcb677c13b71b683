// The WebSockets open through each preview, so a link's end reaches them: a revoke closes them at
// once (previews.service.ts calls `revoked`), an expiry by a timer set when each one opens.
import type { Clock } from '../../../platform/runtime';
import type { PreviewLink } from './previews.service';

export type RelayEnd = (reason: 'revoked' | 'expired') => void;

export function createPreviewRelays(deps: { clock: Clock }) {
  const open = new Map<string, Set<RelayEnd>>();

  return {
    /** Registers an open relay of `link`; returns the function to call when it closes. */
    add(link: PreviewLink, end: RelayEnd): () => void {
      let set = open.get(link.id);
      if (!set) open.set(link.id, (set = new Set()));
      set.add(end);
      // setTimeout's range is 24.8 days; a link lives at most 7.
      const timer = setTimeout(() => end('expired'), Math.max(0, link.expiresAtMs - deps.clock.now()));
      return () => {
        clearTimeout(timer);
        set.delete(end);
        if (!set.size && open.get(link.id) === set) open.delete(link.id);
      };
    },
    /** Ends every relay of a revoked link. */
    revoked(previewId: string) {
      for (const end of [...(open.get(previewId) ?? [])]) end('revoked');
    },
  };
}

export type PreviewRelays = ReturnType<typeof createPreviewRelays>;
