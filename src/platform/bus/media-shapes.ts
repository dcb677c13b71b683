// The media shapes that travel both on the bus (qry.media.probe, evt.catalog.assetIndexed) and in
// HTTP bodies (the catalog's MediaIndex and assets), declared once as t.*: their types, the bus
// payloads of subjects.ts and the OpenAPI schemas all come from here.
import { t, type Static } from 'elysia';

/** ffprobe's codec types; anything else is `unknown`. */
export const STREAM_TYPES = ['video', 'audio', 'subtitle', 'data', 'attachment', 'unknown'] as const;
/** Where keyframe positions came from: the container's index (Matroska Cues, MP4 stss), a packet scan, or nowhere. */
export const KEYFRAME_SOURCES = ['cues', 'mp4-index', 'packet-scan', 'none'] as const;
/** Whether an asset's edition has a work (identified) or not yet (unidentified). */
export const IDENTIFICATIONS = ['identified', 'unidentified'] as const;

export const StreamTypeSchema = t.UnionEnum(STREAM_TYPES);
export const KeyframeSourceSchema = t.UnionEnum(KEYFRAME_SOURCES);
export const IdentificationSchema = t.UnionEnum(IDENTIFICATIONS);

export const ProbeStreamSchema = t.Object({
  index: t.Number(),
  type: StreamTypeSchema,
  codec: t.String(),
  language: t.String({ description: 'ISO 639-2 tag from the container; und when absent' }),
  defaultFlag: t.Boolean(),
  bitRateBps: t.Nullable(t.Number()),
  channels: t.Optional(t.Number()),
  sampleRate: t.Optional(t.Number()),
  frameRate: t.Optional(t.Number()),
  width: t.Optional(t.Number()),
  height: t.Optional(t.Number()),
  profile: t.Optional(t.String({ description: "video: the codec profile as ffprobe names it (High, Main, Baseline); what HLS CODECS are derived from" })),
  level: t.Optional(t.Number({ description: 'video: the codec level (H.264: 31 is 3.1, 40 is 4.0)' })),
});

/** What the media engine found in a file: the facts a MediaIndex is made of. */
export const ProbeFactsSchema = t.Object({
  container: t.String(),
  bitrateBps: t.Number(),
  durationMs: t.Number(),
  streams: t.Array(ProbeStreamSchema),
  capabilities: t.Array(t.String()),
  keyframesMs: t.Array(t.Number(), { description: 'keyframe presentation times of the first video stream in ms, ascending; empty without video' }),
  keyframeSource: KeyframeSourceSchema,
});

export type KeyframeSource = Static<typeof KeyframeSourceSchema>;
export type Identification = Static<typeof IdentificationSchema>;
export type ProbeStream = Static<typeof ProbeStreamSchema>;
export type ProbeFacts = Static<typeof ProbeFactsSchema>;

/** What a medium's own container tags say, read by the media engine with its probe (local metadata). */
export interface MediaTags {
  title?: string;
  year?: number;
  genres?: string[];
  overview?: string;
  /** Stream index of an attached picture (a cover), when there is one. */
  coverStream?: number;
}
