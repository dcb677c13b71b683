// The kind registry: the six audiovisual kinds of the core plus the kinds of content-type plugins.
// A plugin contributes descriptors and may identify files before the core release-name rules.
import type { Identified, IdentifyContext } from './identify';

export interface KindDescriptor {
  id: string;
  label: string;
  /** Presentation family: audiovisual, audio, ... A client meeting an unknown kind uses the generic presentation. */
  family: string;
  /** True when the work has an end (a film); false for open-ended ones (a series, a live channel). */
  finite: boolean;
  /** What a client may do with works of this kind. */
  actions: string[];
  /** Edition kinds an asset of this kind may be filed under. */
  editionKinds: string[];
  /** Asset facets that matter for this kind (see the facets of GET /works/{id}/assets). */
  facets: string[];
  /** Facets an asset must have to be playable as this kind. */
  requiredFacets: string[];
  /** Asset layouts accepted: `file` today. */
  layouts: string[];
  /** Processing pipelines that run on its assets. */
  pipelines: string[];
  /** Relation names this kind takes part in (as parent or child). */
  relations: string[];
}

/**
 * A content-type plugin: its kinds, and optionally an identification rule that runs before the
 * core rules and returns null to let them decide.
 */
export interface KindPlugin {
  id: string;
  kinds: KindDescriptor[];
  identify?(ctx: IdentifyContext): Identified | null;
}

const AV_FACETS = ['video', 'audio', 'subtitles', 'hd', '4k', 'surround'];
const AV_PIPELINES = ['probe', 'keyframe-index'];

export const CORE_KINDS: KindDescriptor[] = [
  {
    id: 'movie', label: 'Movie', family: 'audiovisual', finite: true,
    actions: ['play', 'scan', 'bind-edition'], editionKinds: ['standard', 'directors-cut', 'extended', 'theatrical', 'unrated', 'remastered', 'imax'],
    facets: AV_FACETS, requiredFacets: ['video'], layouts: ['file'], pipelines: AV_PIPELINES, relations: [],
  },
  {
    id: 'series', label: 'Series', family: 'audiovisual', finite: false,
    actions: ['browse'], editionKinds: [], facets: [], requiredFacets: [], layouts: [], pipelines: [], relations: ['has-season'],
  },
  {
    id: 'season', label: 'Season', family: 'audiovisual', finite: true,
    actions: ['browse'], editionKinds: [], facets: [], requiredFacets: [], layouts: [], pipelines: [], relations: ['has-season', 'has-episode'],
  },
  {
    id: 'episode', label: 'Episode', family: 'audiovisual', finite: true,
    actions: ['play', 'scan', 'bind-edition'], editionKinds: ['standard', 'extended'], facets: AV_FACETS, requiredFacets: ['video'],
    layouts: ['file'], pipelines: AV_PIPELINES, relations: ['has-episode'],
  },
  {
    id: 'short', label: 'Short or music video', family: 'audiovisual', finite: true,
    actions: ['play', 'scan', 'bind-edition'], editionKinds: ['standard'], facets: AV_FACETS, requiredFacets: ['video'],
    layouts: ['file'], pipelines: AV_PIPELINES, relations: [],
  },
  {
    id: 'recording', label: 'Live recording', family: 'audiovisual', finite: true,
    actions: ['play', 'scan', 'bind-edition'], editionKinds: ['standard'], facets: AV_FACETS, requiredFacets: ['video'],
    layouts: ['file'], pipelines: AV_PIPELINES, relations: [],
  },
];

export function createKindRegistry(plugins: KindPlugin[]) {
  const kinds = new Map<string, KindDescriptor>();
  for (const k of CORE_KINDS) kinds.set(k.id, k);
  for (const p of plugins) {
    for (const k of p.kinds) {
      // A plugin may add kinds, never redefine one: the registry must stay predictable.
      if (kinds.has(k.id)) throw new Error(`kind plugin ${p.id} redefines the kind ${k.id}`);
      kinds.set(k.id, k);
    }
  }
  return {
    all: () => [...kinds.values()],
    plugins,
  };
}

export type KindRegistry = ReturnType<typeof createKindRegistry>;
