// signer.ts against published vectors and the receivers' own libraries: @octokit/webhooks-methods
// (the GitHub scheme) and standardwebhooks (the Standard Webhooks scheme).
import { expect, test } from 'bun:test';
import { verify as verifyGithub } from '@octokit/webhooks-methods';
import { Webhook } from 'standardwebhooks';
import { deliveryHeaders, githubSignature, signingKey, standardSignature, whsecProblem } from '../../../../src/services/workspaces/webhooks/signer';

test('the GitHub-style signature matches the vector of GitHub\'s documentation', () => {
  expect(githubSignature("It's a Secret to Everybody", 'Hello, World!')).toBe('sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17');
});

test('the Standard Webhooks signature matches the vector of the Standard Webhooks libraries', () => {
  const sig = standardSignature('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'msg_p5jXN8AQM9LWM0D4loKWxJek', 1614265330, '{"test": 2432232314}');
  expect(sig).toBe('v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
});

test('a whsec_ secret keys with its decoded bytes, any other secret with its UTF-8 bytes', () => {
  expect(signingKey('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw')).toEqual(Buffer.from('MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'base64'));
  expect(signingKey('plain-secret-éü')).toEqual(Buffer.from('plain-secret-éü', 'utf8'));
});

test('@octokit/webhooks-methods verifies X-Webhook-Signature and rejects a changed body', async () => {
  const body = JSON.stringify({ event: 'workspace.started', timestamp: '2026-01-01T00:00:00.000Z', workspace: { id: 'ws_1', status: 'running' } });
  const h = deliveryHeaders({ secret: 'a-long-enough-secret', deliveryId: 'msg_1', event: 'workspace.started', body, timestampSeconds: 1_700_000_000 });
  expect(await verifyGithub('a-long-enough-secret', body, h['x-webhook-signature']!)).toBe(true);
  expect(await verifyGithub('a-long-enough-secret', body + ' ', h['x-webhook-signature']!)).toBe(false);
  expect(await verifyGithub('another-secret-entirely', body, h['x-webhook-signature']!)).toBe(false);
});

test('standardwebhooks verifies the webhook-* headers for a whsec_ secret and for a raw secret', () => {
  const body = '{"event":"ping"}';
  const now = Math.floor(Date.now() / 1000);
  const whsec = 'whsec_' + Buffer.from('0123456789abcdef0123456789abcdef').toString('base64');
  const a = deliveryHeaders({ secret: whsec, deliveryId: 'msg_2', event: 'ping', body, timestampSeconds: now });
  expect(new Webhook(whsec).verify(body, a)).toEqual({ event: 'ping' });
  const raw = 'a-plain-text-secret';
  const b = deliveryHeaders({ secret: raw, deliveryId: 'msg_3', event: 'ping', body, timestampSeconds: now });
  expect(new Webhook(raw, { format: 'raw' }).verify(body, b)).toEqual({ event: 'ping' });
  expect(() => new Webhook(raw, { format: 'raw' }).verify(body.replace('ping', 'pong'), b)).toThrow();
});

test('every delivery header names the event and the delivery id twice', () => {
  const h = deliveryHeaders({ secret: 'a-long-enough-secret', deliveryId: 'msg_x', event: 'workspace.deleted', body: '{}', timestampSeconds: 42 });
  expect(h).toMatchObject({ 'x-webhook-event': 'workspace.deleted', 'x-webhook-delivery': 'msg_x', 'webhook-id': 'msg_x', 'webhook-timestamp': '42', 'content-type': 'application/json' });
  expect(h['x-webhook-signature']).toMatch(/^sha256=[0-9a-f]{64}$/);
  expect(h['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
});

test('a whsec_ secret must be base64 of at least 16 bytes', () => {
  expect(whsecProblem('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw')).toBeNull();
  expect(whsecProblem('whsec_not base64!')).toContain('base64');
  expect(whsecProblem('whsec_AAAA')).toContain('16 bytes');
  expect(whsecProblem('no-prefix-at-all')).toBeNull();
});
