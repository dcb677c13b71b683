// The two signatures every delivery carries (CONTRACT.md), as pure functions: secret, id, time and
// body in, headers out. No clock and no I/O here, so tests pin the outputs against known vectors.
import { createHmac } from 'node:crypto';

/** The HMAC key of a secret: the decoded base64 of a `whsec_<base64>` secret, else its UTF-8 bytes. */
export function signingKey(secret: string): Buffer {
  return secret.startsWith('whsec_') ? Buffer.from(secret.slice(6), 'base64') : Buffer.from(secret, 'utf8');
}

/** A `whsec_` secret whose rest is not canonical base64 of at least 16 bytes cannot be verified by the libraries. */
export function whsecProblem(secret: string): string | null {
  if (!secret.startsWith('whsec_')) return null;
  const b64 = secret.slice(6);
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(b64) || b64.length % 4 !== 0) return 'a secret written whsec_... must be followed by base64';
  if (Buffer.from(b64, 'base64').length < 16) return 'a whsec_ secret must decode to at least 16 bytes';
  return null;
}

/** GitHub's scheme: `sha256=` + hex HMAC-SHA256 of the raw body, keyed by the secret's UTF-8 bytes. */
export function githubSignature(secret: string, body: string): string {
  return 'sha256=' + createHmac('sha256', Buffer.from(secret, 'utf8')).update(body).digest('hex');
}

/** Standard Webhooks: `v1,` + base64 HMAC-SHA256 of `{id}.{timestamp}.{body}`. */
export function standardSignature(secret: string, id: string, timestampSeconds: number, body: string): string {
  return 'v1,' + createHmac('sha256', signingKey(secret)).update(`${id}.${timestampSeconds}.${body}`).digest('base64');
}

export interface SignInput {
  secret: string;
  deliveryId: string;
  event: string;
  body: string;
  /** Unix seconds of this attempt (Standard Webhooks receivers reject old timestamps, so it is per attempt). */
  timestampSeconds: number;
}

/** Every header a delivery attempt carries, signatures included. */
export function deliveryHeaders(input: SignInput): Record<string, string> {
  return {
    'content-type': 'application/json',
    'user-agent': 'Keel-Webhooks/1',
    'x-webhook-event': input.event,
    'x-webhook-delivery': input.deliveryId,
    'x-webhook-signature': githubSignature(input.secret, input.body),
    'webhook-id': input.deliveryId,
    'webhook-timestamp': String(input.timestampSeconds),
    'webhook-signature': standardSignature(input.secret, input.deliveryId, input.timestampSeconds, input.body),
  };
}
