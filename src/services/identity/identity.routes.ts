// The identity service over HTTP: actors (admin), sessions, the JWKS and key rotation. Wiring only;
// the rules live in identity.service.ts.
import { Elysia, t } from 'elysia';
import { decodeProtectedHeader } from 'jose';
import { bearerTokenOf, createAccessTokenVerifier } from '../../platform/auth/access-token';
import { forbidden, unauthenticated } from '../../platform/auth/denials';
import { ADMIN_POLICY } from '../../platform/auth/policies';
import { livePrincipal } from '../../platform/auth/session-check';
import { TokenError, verifyHs256 } from '../../platform/auth/workspace-token';
import { JwksSchema } from '../../platform/bus/identity-shapes';
import { ProblemSchema } from '../../platform/http/errors';
import { createTokenBucket, rateLimited } from '../../platform/http/rate-limit';
import { createServiceApp } from '../../platform/http/service-app';
import type { ServiceDeps } from '../../platform/service';
import {
  ActorSchema,
  ActorWithKey,
  CreateActorBody,
  CreateSessionBody,
  IdParams,
  RefreshBody,
  RotatedKey,
  TokenPair,
  UpdateActorBody,
} from './identity.model';
import type { Caller, IdentityCore } from './identity.service';
import type { IdentityConfig } from './identity.config';
import type { KeyStore } from './keys';
import { identityErrors, identityOperation as op } from './identity.errors';
import * as identityModels from './identity.model';


/**
 * Who calls: a workspace-API admin token (HS256, APP_API_SECRET, role admin), or an access token of
 * this service (verified with our own keys and live state, no bus round trip).
 */
function callerAuth(deps: ServiceDeps, core: IdentityCore, keys: KeyStore) {
  const verify = createAccessTokenVerifier({ keyFor: keys.keyFor, clock: deps.clock });

  const callerOf = async (request: Request): Promise<Caller> => {
    const token = bearerTokenOf(request.headers.get('authorization'));
    let alg: unknown;
    try {
      alg = decodeProtectedHeader(token).alg;
    } catch {
      throw unauthenticated('The access token is not acceptable');
    }
    if (alg === 'HS256') {
      try {
        const claims = verifyHs256(token, deps.config.apiSecret, deps.clock.now());
        if (claims.role !== 'admin') throw forbidden();
        return { admin: true };
      } catch (e) {
        if (e instanceof TokenError) throw unauthenticated('The admin token is not acceptable');
        throw e;
      }
    }
    const claims = await verify(token);
    const { actorId, policies } = livePrincipal(claims, core.sessionState(claims.sessionId, claims.actorId));
    return { admin: policies.includes(ADMIN_POLICY), actorId };
  };

  return new Elysia({ name: 'identity.auth' }).macro({
    /** `admin`: only admins; `caller`: any live session or admin. */
    auth: (need: 'admin' | 'caller') => ({
      async resolve({ request }) {
        const caller = await callerOf(request);
        if (need === 'admin' && !caller.admin) throw forbidden();
        return { caller };
      },
    }),
  });
}

/** A token bucket per client address on the routes that take a secret, checked before the body is validated. */
function clientBudget(spec: IdentityConfig['sessionRate'], clock: ServiceDeps['clock']) {
  const bucket = createTokenBucket(spec, clock);
  return new Elysia({ name: 'identity.client-budget' }).macro({
    clientBudget: (on: boolean) => ({
      transform({ request, server }) {
        if (!on) return;
        const d = bucket.take(server?.requestIP(request)?.address ?? 'unknown');
        if (!d.allowed) throw rateLimited(d.retryAfter, d.limit);
      },
    }),
  });
}

/** What the admin and caller checks answer: no or a bad token, an ended session, not an admin. */
const ADMIN = ['unauthenticated', 'reauth-required', 'forbidden'] as const;

// Answers that carry a secret (an API key, a refresh token) must not be kept by any cache.
const noStore = { 'cache-control': 'no-store' };

export function createIdentityApp(deps: ServiceDeps, config: IdentityConfig, core: IdentityCore, keys: KeyStore) {
  const adminErrors = { 401: ProblemSchema, 403: ProblemSchema, 422: ProblemSchema };
  return createServiceApp(deps, {
    name: 'identity',
    style: 'problem',
    errors: identityErrors,
    models: [identityModels],
    title: 'Keel identity service',
    description:
      'Actors with policies and API keys, sessions with EdDSA access tokens and rotating refresh tokens, and the JWKS that verifies them. Admin routes take a workspace-API admin token (HS256) or an access token with the admin:identity policy.',
    dottedPaths: true,
    tags: [
      { name: 'actors', description: 'Actors, policies and API keys (admin)' },
      { name: 'sessions', description: 'Access and refresh tokens' },
      { name: 'keys', description: 'Signing keys and the JWKS' },
    ],
  })
    .use(callerAuth(deps, core, keys))
    .use(clientBudget(config.sessionRate, deps.clock))
    .get('/.well-known/jwks.json', ({ set }) => {
      set.headers['cache-control'] = 'public, max-age=60';
      return { keys: keys.publicJwks() };
    }, {
      response: { 200: JwksSchema },
      detail: { ...op('getJwks'), tags: ['keys'], summary: 'Public keys (Ed25519) that verify access tokens', security: [] },
    })
    .post('/keys/rotate', async () => keys.rotate(), {
      auth: 'admin',
      response: { 200: RotatedKey, ...adminErrors, 409: ProblemSchema },
      detail: { ...op('rotateSigningKey', [...ADMIN, 'IDENTITY_KEYS_EXTERNAL']),
        tags: ['keys'],
        summary: 'Rotate the signing key',
        description: 'New tokens are signed with a new key; the previous one stays in the JWKS until previousPublishedUntil (APP_IDENTITY_KEY_OVERLAP_S), so the tokens it signed stay valid until they expire. 409 IDENTITY_KEYS_EXTERNAL when the key comes from APP_IDENTITY_SIGNING_KEY.',
      },
    })
    .post('/actors', ({ body, status, set }) => {
      Object.assign(set.headers, noStore);
      return status(201, core.createActor(body));
    }, {
      auth: 'admin',
      body: CreateActorBody,
      response: { 201: ActorWithKey, ...adminErrors },
      detail: { ...op('createActor', ADMIN), tags: ['actors'], summary: 'Create an actor', description: 'Answers the API key once; only its hash is kept.' },
    })
    .get('/actors', () => ({ actors: core.listActors() }), {
      auth: 'admin',
      response: { 200: t.Object({ actors: t.Array(ActorSchema) }), ...adminErrors },
      detail: { ...op('listActors', ADMIN), tags: ['actors'], summary: 'List actors' },
    })
    .get('/actors/:id', ({ params }) => ({ actor: core.getActor(params.id) }), {
      auth: 'admin',
      params: IdParams,
      response: { 200: t.Object({ actor: ActorSchema }), ...adminErrors, 404: ProblemSchema },
      detail: { ...op('getActor', [...ADMIN, 'IDENTITY_ACTOR_NOT_FOUND']), tags: ['actors'], summary: 'Get an actor' },
    })
    .patch('/actors/:id', ({ params, body }) => ({ actor: core.updateActor(params.id, body) }), {
      auth: 'admin',
      params: IdParams,
      body: UpdateActorBody,
      response: { 200: t.Object({ actor: ActorSchema }), ...adminErrors, 404: ProblemSchema },
      detail: { ...op('updateActor', [...ADMIN, 'IDENTITY_ACTOR_NOT_FOUND']),
        tags: ['actors'],
        summary: 'Rename, disable or re-enable an actor, or change its policies',
        description: 'Disabling or changing policies ends the actor\'s sessions: they answer 401 reauth-required (reason actor-disabled or policies-changed).',
      },
    })
    .post('/actors/:id/keys/rotate', ({ params, set }) => {
      Object.assign(set.headers, noStore);
      return core.rotateActorKey(params.id);
    }, {
      auth: 'admin',
      params: IdParams,
      response: { 200: ActorWithKey, ...adminErrors, 404: ProblemSchema },
      detail: { ...op('rotateActorKey', [...ADMIN, 'IDENTITY_ACTOR_NOT_FOUND']),
        tags: ['actors'],
        summary: 'Rotate an actor\'s API key',
        description: 'Answers the new key once. The old key stops working now; sessions it opened answer 401 reauth-required (reason key-rotated).',
      },
    })
    .post('/sessions', async ({ body, status, set }) => {
      Object.assign(set.headers, noStore);
      return status(201, await core.createSession(body.apiKey));
    }, {
      clientBudget: true,
      body: CreateSessionBody,
      response: { 201: TokenPair, 401: ProblemSchema, 422: ProblemSchema, 429: ProblemSchema },
      detail: { ...op('createSession', ['unauthenticated', 'rate-limited']), tags: ['sessions'], summary: 'Open a session with an API key', security: [] },
    })
    .post('/sessions/refresh', async ({ body, set }) => {
      Object.assign(set.headers, noStore);
      return core.refreshSession(body.refreshToken);
    }, {
      clientBudget: true,
      body: RefreshBody,
      response: { 200: TokenPair, 401: ProblemSchema, 422: ProblemSchema, 429: ProblemSchema },
      detail: { ...op('refreshSession', ['unauthenticated', 'reauth-required', 'rate-limited']),
        tags: ['sessions'],
        summary: 'Exchange a refresh token for a new access and refresh token',
        description: 'Each refresh token works once. Presenting a used one revokes the session (401 reauth-required, reason refresh-reuse).',
        security: [],
      },
    })
    .delete('/sessions/:id', ({ params, caller, status }) => {
      core.revokeSession(params.id, caller);
      return status(204, undefined);
    }, {
      auth: 'caller',
      params: IdParams,
      response: { 204: t.Undefined(), 401: ProblemSchema, 403: ProblemSchema, 404: ProblemSchema },
      detail: { ...op('revokeSession', [...ADMIN, 'IDENTITY_SESSION_NOT_FOUND']),
        tags: ['sessions'],
        summary: 'Revoke a session',
        description: 'With an access token of the same actor, or as admin. Another actor\'s session answers 404. Guards refuse the session within their live-cache time (2 s).',
      },
    });
}
