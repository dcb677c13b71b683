// The identity shapes that travel both on the bus (qry.identity.jwks) and over HTTP
// (/.well-known/jwks.json), declared once as t.*: the identity service publishes them, every
// Bearer guard reads them.
import { t, type Static } from 'elysia';

/** An Ed25519 public key as published in the JWKS (never the private part). */
export const PublicJwkSchema = t.Object({
  kty: t.Literal('OKP'),
  crv: t.Literal('Ed25519'),
  x: t.String(),
  kid: t.String(),
  alg: t.Literal('EdDSA'),
  use: t.Literal('sig'),
});

/** The public keys that verify access tokens. */
export const JwksSchema = t.Object({ keys: t.Array(PublicJwkSchema) });

export type IdentityPublicJwk = Static<typeof PublicJwkSchema>;
export type Jwks = Static<typeof JwksSchema>;
