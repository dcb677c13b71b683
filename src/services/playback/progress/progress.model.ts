// Shapes of watch state (t.*): the body of PUT /progress/{assetId} and the items of GET /progress.
import { t, type Static } from 'elysia';

export const ProgressAssetParams = t.Object({ assetId: t.String({ minLength: 1, maxLength: 128, description: 'a catalog asset id' }) });

export const PutProgressBody = t.Object(
  { positionMs: t.Integer({ minimum: 0, maximum: 1_000_000_000_000, description: 'where the actor is in the asset, in ms; past its end counts as its end' }) },
  { additionalProperties: false },
);

export const ProgressItemSchema = t.Object({
  assetId: t.String(),
  positionMs: t.Number(),
  played: t.Boolean({ description: "true when positionMs is past 90 % of the asset's duration" }),
  updatedAt: t.Number({ description: 'Unix epoch ms of the last PUT' }),
});

export const ProgressListQuery = t.Object({
  inProgress: t.Optional(t.BooleanString({ description: 'true: only assets started (positionMs > 0) and not played: "continue watching"' })),
  limit: t.Optional(t.Integer({ minimum: 1, maximum: 500, default: 100, description: 'newest first; at most this many' })),
});

export const ProgressItemResponse = t.Object({ item: ProgressItemSchema });
export const ProgressListResponse = t.Object({ items: t.Array(ProgressItemSchema) });

export type ProgressItem = Static<typeof ProgressItemSchema>;
