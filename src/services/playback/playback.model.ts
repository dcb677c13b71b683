// The playback service's shapes (t.*): validation, types and OpenAPI from one place.
import { t, type Static } from 'elysia';

export const PLAYBACK_MODES = ['hls', 'direct'] as const;

export const CreateSessionBody = t.Object(
  {
    assetId: t.String({ minLength: 1, maxLength: 128, description: 'a catalog asset id' }),
    mode: t.Optional(t.UnionEnum(PLAYBACK_MODES, { default: 'hls', description: 'direct: the file itself with Range; hls (default): playlists and segments' })),
  },
  { additionalProperties: false },
);

export const PlaybackSessionSchema = t.Object(
  {
    id: t.String(),
    assetId: t.String(),
    mode: t.UnionEnum(PLAYBACK_MODES),
    url: t.String({ description: 'works without headers until expiresAt: the master playlist (hls) or the file (direct)' }),
    expiresAt: t.Number({ description: 'Unix epoch ms' }),
  },
);

export const CreateSessionResponse = t.Object({ session: PlaybackSessionSchema });

export const SessionIdParams = t.Object({ id: t.String({ minLength: 1, maxLength: 128, description: 'a playback session id (pbs_...)' }) });

export const EndedPlaybackSessionSchema = t.Object({
  id: t.String(),
  assetId: t.String(),
  mode: t.UnionEnum(PLAYBACK_MODES),
  expiresAt: t.Number({ description: 'Unix epoch ms the URL would have expired at' }),
  endedAt: t.Number({ description: 'Unix epoch ms of the end (ending it again keeps the first)' }),
});

export const EndSessionResponse = t.Object({ session: EndedPlaybackSessionSchema });

export const TokenParams = t.Object({ token: t.String({ minLength: 1, maxLength: 1024 }) });
export const TokenFileParams = t.Object({
  token: t.String({ minLength: 1, maxLength: 1024 }),
  name: t.String({ minLength: 1, maxLength: 64, description: 'segment-<n>.ts (hls) or file.<ext> (direct)' }),
});

export type PlaybackSession = Static<typeof PlaybackSessionSchema>;
export type EndedPlaybackSession = Static<typeof EndedPlaybackSessionSchema>;
