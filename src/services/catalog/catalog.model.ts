// t.* schemas of the catalog API: validation, types and the OpenAPI description in one place.
import { t, type Static } from 'elysia';
import { IdentificationSchema, ProbeFactsSchema } from '../../platform/bus/media-shapes';

export const WorkImagesSchema = t.Object(
  {
    poster: t.Nullable(t.String({ description: 'path of GET /works/{id}/images/poster' })),
    backdrop: t.Nullable(t.String({ description: 'path of GET /works/{id}/images/backdrop' })),
  },
  { description: 'paths of the images found with the media (poster.jpg, folder.jpg, <name>-poster.jpg or an embedded cover; fanart.jpg); null: none' },
);

export const WorkSchema = t.Object({
  id: t.String(),
  kind: t.String({ description: 'id of a registered kind (GET /kinds)' }),
  title: t.String(),
  originalTitle: t.String(),
  year: t.Number({ description: 'release year; 0 when unknown' }),
  overview: t.String({ description: "the plot from a local .nfo (`<plot>`, else `<outline>`) or the file's own tags; '' when none says" }),
  genres: t.Array(t.String(), { description: "from a local .nfo (`<genre>`) or the file's genre tag" }),
  images: WorkImagesSchema,
  createdAt: t.Number(),
  updatedAt: t.Number(),
});

export const AssetSchema = t.Object({
  id: t.String(),
  editionId: t.String(),
  path: t.String({ description: 'path relative to its media root, symlinks resolved' }),
  container: t.String({ description: 'mkv, webm, mp4, m4a, mov, ...; "unknown" for a file that is not a medium' }),
  fastHash: t.String({ description: 'OpenSubtitles hash: 16 hex digits' }),
  sizeBytes: t.Number(),
  identification: IdentificationSchema,
  kind: t.String({ description: 'logical-composition (a medium: streams in one file) or opaque (not a medium)' }),
  layout: t.String({ description: 'file' }),
  createdAt: t.Number(),
  updatedAt: t.Number(),
});

/** The media engine's facts as a scan stored them (where the keyframes came from stays internal). */
export const MediaIndexSchema = t.Object({
  id: t.String(),
  assetId: t.String(),
  ...t.Omit(ProbeFactsSchema, ['keyframeSource']).properties,
  indexVersion: t.Number({ description: 'starts at 1; +1 each time a rescan changes the index (new file content, or new facts from the engine)' }),
  createdAt: t.Number(),
});

export const ScanBody = t.Object({
  path: t.String({ minLength: 1, maxLength: 4096, description: 'relative to a media root (APP_MEDIA_ROOTS); never absolute' }),
  editionId: t.Optional(t.String({ minLength: 1, maxLength: 128, description: 'file the asset under this edition' })),
  workId: t.Optional(t.String({ minLength: 1, maxLength: 128, description: 'file the asset under this work (its standard edition)' })),
  root: t.Optional(t.Integer({ minimum: 0, maximum: 63, description: 'index of the media root; default: the first root holding the path' })),
});

export const ScanResponse = t.Object({
  asset: AssetSchema,
  index: t.Nullable(MediaIndexSchema, { description: 'null when the file is not a medium' }),
  indexed: t.Boolean(),
});

export const AudioTrackSchema = t.Object({
  index: t.Number({ description: 'the stream index in the file' }),
  language: t.String({ description: 'ISO 639-2/T (eng, fra, deu); und when unknown' }),
  codec: t.String({ description: "ffprobe's codec name: aac, ac3, eac3, dts, truehd, opus, ..." }),
  channels: t.Number(),
  default: t.Boolean({ description: 'the container marks it as the default track' }),
});

export const SubtitleTrackSchema = t.Object({
  index: t.Optional(t.Number({ description: 'the stream index in the file (embedded only)' })),
  language: t.String({ description: 'ISO 639-2/T; a sidecar\'s from its name (Movie.en.srt, Movie.fre.srt); und when unknown' }),
  format: t.String({ description: 'srt, ass, vtt, mov_text (text); pgs, vobsub, dvb (pictures)' }),
  text: t.Boolean({ description: 'true: a text subtitle, played as a WebVTT rendition; false: a bitmap subtitle, listed only' }),
  source: t.UnionEnum(['embedded', 'sidecar'] as const),
});

export const AssetSummarySchema = t.Object({
  assetId: t.String(),
  editionId: t.String(),
  container: t.String(),
  durationMs: t.Number({ description: '0 when not indexed' }),
  facets: t.Array(t.String({ description: 'video, audio, subtitles, hd, 4k, surround' })),
  identification: IdentificationSchema,
  indexed: t.Boolean(),
  layout: t.String(),
  sizeBytes: t.Number(),
  available: t.Boolean({ description: 'false once a library scan found the file gone (the asset is kept); true again when it is back' }),
  audio: t.Array(AudioTrackSchema, { description: 'every audio stream, in stream order' }),
  subtitles: t.Array(SubtitleTrackSchema, { description: 'embedded subtitle streams, then sidecar files beside the medium' }),
});

export const RelationSchema = t.Object({
  parentWorkId: t.String(),
  childWorkId: t.String(),
  rel: t.String({ description: 'has-season (series to season) or has-episode (season to episode)' }),
  ordinal: t.Array(t.Number(), { description: 'numeric path: [1, 3] is season 1, episode 3' }),
  createdAt: t.Number(),
});

export const KindSchema = t.Object({
  id: t.String(),
  label: t.String(),
  family: t.String(),
  finite: t.Boolean(),
  actions: t.Array(t.String()),
  editionKinds: t.Array(t.String()),
  facets: t.Array(t.String()),
  requiredFacets: t.Array(t.String()),
  layouts: t.Array(t.String()),
  pipelines: t.Array(t.String()),
  relations: t.Array(t.String()),
});

export const WorkIdParams = t.Object({ id: t.String({ minLength: 1, maxLength: 128 }) });
export const WorksQuery = t.Object({
  page: t.Optional(t.Integer({ minimum: 1, default: 1, title: 'page' })),
  pageSize: t.Optional(t.Integer({ minimum: 1, maximum: 200, default: 50, title: 'pageSize' })),
  q: t.Optional(t.String({ minLength: 1, maxLength: 200, description: 'words of the title or original title, any order and case, accents folded; each must start a word' })),
  kind: t.Optional(t.String({ minLength: 1, maxLength: 64, description: 'a kind id (GET /kinds)' })),
  year: t.Optional(t.Integer({ minimum: 0, maximum: 9999, description: 'release year' })),
  genre: t.Optional(t.String({ minLength: 1, maxLength: 100, description: 'one genre, case and accents folded' })),
});

export const IMAGE_KINDS = ['poster', 'backdrop'] as const;
export const WorkImageParams = t.Object({ id: t.String({ minLength: 1, maxLength: 128 }), kind: t.UnionEnum(IMAGE_KINDS) });
export const WorkImageQuery = t.Object({
  width: t.Optional(t.Integer({ minimum: 16, maximum: 3840, description: 'resize to this width (the height keeps the ratio); answered as JPEG, made once and cached' })),
});
export type WorksFilter = Pick<Static<typeof WorksQuery>, 'q' | 'kind' | 'year' | 'genre'>;
export type ImageKind = (typeof IMAGE_KINDS)[number];

export type Work = Static<typeof WorkSchema>;
export type Asset = Static<typeof AssetSchema>;
export type MediaIndex = Static<typeof MediaIndexSchema>;
/** The list answers, named so that generated clients get one type each. */
export const KindListSchema = t.Object({ kinds: t.Array(KindSchema) });
export const WorkPageSchema = t.Object({ total: t.Number({ description: 'works in the catalog' }), works: t.Array(WorkSchema) });
export const WorkAnswerSchema = t.Object({ work: WorkSchema });
export const AssetListSchema = t.Object({ assets: t.Array(AssetSummarySchema) });
export const RelationListSchema = t.Object({ relations: t.Array(RelationSchema) });

export type AssetSummary = Static<typeof AssetSummarySchema>;
export type Relation = Static<typeof RelationSchema>;
export type ScanInput = Static<typeof ScanBody>;
