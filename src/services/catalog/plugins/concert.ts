// Content-type plugin: concerts. `Artist - Live at Venue (Year)` or a file under a `Concerts` folder.
import type { KindPlugin } from '../kinds';
import { cleanTitle, yearOf } from '../identify';

export const concertPlugin: KindPlugin = {
  id: 'concert',
  kinds: [
    {
      id: 'concert', label: 'Concert', family: 'audiovisual', finite: true,
      actions: ['play', 'scan', 'bind-edition'], editionKinds: ['standard', 'extended'],
      facets: ['video', 'audio', 'hd', '4k', 'surround'], requiredFacets: ['audio'], layouts: ['file'],
      pipelines: ['probe', 'keyframe-index'], relations: [],
    },
  ],
  identify(ctx) {
    const underFolder = ctx.segments.slice(0, -1).some((s) => s.toLowerCase() === 'concerts');
    if (!underFolder && !/\blive (at|in|from)\b/i.test(ctx.stem.replaceAll('.', ' '))) return null;
    const year = yearOf(ctx.stem) ?? 0;
    const title = cleanTitle(ctx.stem.replace(/[([]?\b(19|20)\d{2}\b[)\]]?.*$/, ''));
    if (!title) return null;
    return { kind: 'concert', key: `concert|${title.toLowerCase()}|${year}`, title, year, editionKind: 'standard' };
  },
};
