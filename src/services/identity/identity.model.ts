// t.* schemas of the identity API: validation, types and OpenAPI from one place.
import { t } from 'elysia';
import { JwksSchema } from '../../platform/bus/identity-shapes';
import { POLICIES } from '../../platform/auth/policies';

export const PolicySchema = t.UnionEnum(POLICIES, { description: 'a policy an actor can hold' });

export const ActorSchema = t.Object({
  id: t.String(),
  name: t.String(),
  policies: t.Array(t.String()),
  disabled: t.Boolean(),
  apiKeyHint: t.String({ description: 'the first characters of the current API key, to tell keys apart' }),
  keyRotatedAt: t.Nullable(t.Number({ description: 'Unix epoch ms of the last API key rotation' })),
  createdAt: t.Number(),
  updatedAt: t.Number(),
});

export const CreateActorBody = t.Object(
  {
    name: t.String({ minLength: 1, maxLength: 128 }),
    policies: t.Array(PolicySchema, { maxItems: 32 }),
  },
  { additionalProperties: false },
);

export const UpdateActorBody = t.Object(
  {
    name: t.Optional(t.String({ minLength: 1, maxLength: 128 })),
    disabled: t.Optional(t.Boolean({ description: 'a disabled actor cannot open sessions; its sessions need re-authentication' })),
    policies: t.Optional(t.Array(PolicySchema, { maxItems: 32, description: 'a change ends the actor\'s sessions (reason policies-changed)' })),
  },
  { additionalProperties: false },
);

export const ActorWithKey = t.Object({
  actor: ActorSchema,
  apiKey: t.String({ description: 'keel_ak_...: shown once, stored only as a hash' }),
});

export const SessionSchema = t.Object({
  id: t.String(),
  actorId: t.String(),
  createdAt: t.Number(),
  expiresAt: t.Number({ description: 'absolute end of the session (Unix epoch ms); no refresh extends it' }),
  refreshExpiresAt: t.Nullable(t.Number({ description: 'end of the refresh token just issued (Unix epoch ms)' })),
  revokedAt: t.Nullable(t.Number()),
});

export const TokenPair = t.Object({
  session: SessionSchema,
  accessToken: t.String({ description: 'EdDSA JWT: sub, sid, policies, iat, exp, iss, aud; kid in the header' }),
  refreshToken: t.String({ description: 'keel_rt_...: opaque, single use' }),
  expiresIn: t.Number({ description: 'seconds until the access token expires' }),
  tokenType: t.Literal('Bearer'),
});

export const RevokedSession = t.Object({
  session: SessionSchema,
});

export const CreateSessionBody = t.Object({ apiKey: t.String({ minLength: 1, maxLength: 256 }) }, { additionalProperties: false });
export const RefreshBody = t.Object({ refreshToken: t.String({ minLength: 1, maxLength: 256 }) }, { additionalProperties: false });

export const IdParams = t.Object({ id: t.String({ minLength: 1, maxLength: 128 }) });

export const RotateKeyBody = t.Optional(
  t.Object(
    {
      retirePrevious: t.Optional(
        t.Boolean({ description: 'true: the previous key leaves the JWKS now and every token it signed is refused (a leaked key); default false: it stays for the overlap' }),
      ),
    },
    { additionalProperties: false },
  ),
);

export const RotatedKey = t.Object({
  kid: t.String({ description: 'the key that signs from now on' }),
  previousKid: t.String(),
  previousPublishedUntil: t.Number({ description: 'Unix epoch ms until which the previous key stays in the JWKS' }),
});

/** The JWKS (the bus's shape), and the actor answers, named so that generated clients get one type each. */
export { JwksSchema };
export const ActorListSchema = t.Object({ actors: t.Array(ActorSchema) });
export const ActorAnswerSchema = t.Object({ actor: ActorSchema });
