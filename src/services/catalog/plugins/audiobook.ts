// Content-type plugin: audiobooks. An .m4b file, or any audio file under a folder named
// `Audiobooks`, is an audiobook; its title comes from the file name (`Title (Year)`).
import type { KindPlugin } from '../kinds';
import { cleanTitle, yearOf } from '../identify';

export const audiobookPlugin: KindPlugin = {
  id: 'audiobook',
  kinds: [
    {
      id: 'audiobook', label: 'Audiobook', family: 'audio', finite: true,
      actions: ['play', 'scan', 'resume', 'bind-edition'], editionKinds: ['unabridged', 'abridged'],
      facets: ['audio', 'surround'], requiredFacets: ['audio'], layouts: ['file'], pipelines: ['probe', 'chapters'], relations: [],
    },
  ],
  identify(ctx) {
    const underFolder = ctx.segments.slice(0, -1).some((s) => s.toLowerCase() === 'audiobooks');
    if (ctx.extension !== 'm4b' && !underFolder) return null;
    const title = cleanTitle(ctx.stem.replace(/\(\d{4}\)/, ''));
    if (!title) return null;
    const year = yearOf(ctx.stem) ?? 0;
    return {
      kind: 'audiobook',
      key: `audiobook|${title.toLowerCase()}|${year}`,
      title,
      year,
      editionKind: /\babridged\b/i.test(ctx.stem) && !/unabridged/i.test(ctx.stem) ? 'abridged' : 'unabridged',
    };
  },
};
