// What an access token may carry and who signs it: shared by the identity service (which signs)
// and every Bearer guard (which demands), so neither reaches into the other.

/** `iss` and `aud` of every access token; the identity service signs with these, guards demand them. */
export const ACCESS_TOKEN_ISSUER = 'keel-identity';
export const ACCESS_TOKEN_AUDIENCE = 'keel-media';
/** JWT `typ` header of access tokens (RFC 9068), so no other JWT signed by the same key passes. */
export const ACCESS_TOKEN_TYPE = 'at+jwt';
/** CONTRACT.md: `exp` at most 15 minutes after `iat`. */
export const ACCESS_TOKEN_MAX_TTL_S = 900;

/** Every policy an actor can hold. */
export const POLICIES = [
  'resource:work:read',
  'resource:asset:read',
  'resource:asset:scan',
  'resource:asset:play',
  'resource:source:read',
  'resource:source:write',
  'admin:identity',
] as const;
export type Policy = (typeof POLICIES)[number];

/** The policy that makes an access token an identity admin. */
export const ADMIN_POLICY: Policy = 'admin:identity';
