// Ed25519 signing keys: generated on first start and kept in APP_DATA_DIR/identity-keys.json (0600),
// or given by APP_IDENTITY_SIGNING_KEY. Rotation retires the current key; a retired key stays
// published (and verifiable) for the overlap window, so tokens it signed live until they expire, or
// leaves the JWKS at once when the rotation retires it (a leaked key). Each change of the published
// set is reported (`onChange`), so verifiers elsewhere drop a retired key without waiting to re-read.
import { chmodSync, existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, importJWK, importPKCS8, type CryptoKey, type JWK } from 'jose';
import type { IdentityPublicJwk } from '../../platform/bus/identity-shapes';
import { ConfigError } from '../../platform/config';
import { IdentityErrors } from './identity.errors';
import type { Clock, Logger } from '../../platform/runtime';

interface StoredKey {
  kid: string;
  /** Private JWK (kty OKP, crv Ed25519, x, d). */
  jwk: JWK;
  createdAt: number;
  /** When it stopped signing; published until retiredAt + overlap. */
  retiredAt: number | null;
}

interface LoadedKey extends StoredKey {
  privateKey: CryptoKey;
  publicKey: CryptoKey;
}

export interface KeyStore {
  /** The key that signs now (rotated first when older than the maximum age). */
  signing(): Promise<{ kid: string; privateKey: CryptoKey }>;
  /** Current and retired-but-overlapping public keys, newest first. */
  publicJwks(): IdentityPublicJwk[];
  /** A published public key by kid. */
  keyFor(kid: string): Promise<CryptoKey | undefined>;
  /** Retires the current key and starts signing with a new one; `retirePrevious`: it leaves the JWKS now. */
  rotate(opts?: { retirePrevious?: boolean }): Promise<{ kid: string; previousKid: string; previousPublishedUntil: number }>;
  /** The kids published now. */
  publishedKids(): string[];
  readonly external: boolean;
}

const FILE = 'identity-keys.json';
const isEd25519Private = (j: JWK) => j.kty === 'OKP' && j.crv === 'Ed25519' && typeof j.x === 'string' && typeof j.d === 'string';

async function load(k: StoredKey): Promise<LoadedKey> {
  const privateKey = (await importJWK(k.jwk, 'EdDSA')) as CryptoKey;
  const publicKey = (await importJWK({ kty: 'OKP', crv: 'Ed25519', x: k.jwk.x }, 'EdDSA')) as CryptoKey;
  return { ...k, privateKey, publicKey };
}

async function fresh(now: number): Promise<StoredKey> {
  const { privateKey } = await generateKeyPair('EdDSA', { extractable: true });
  const jwk = await exportJWK(privateKey);
  return { kid: await calculateJwkThumbprint(jwk), jwk: { kty: 'OKP', crv: 'Ed25519', x: jwk.x, d: jwk.d }, createdAt: now, retiredAt: null };
}

/** Parses APP_IDENTITY_SIGNING_KEY: a PKCS8 PEM (literal `\n` allowed) or a private JWK. */
async function fromVariable(raw: string, now: number): Promise<StoredKey> {
  const bad = () => new ConfigError('APP_IDENTITY_SIGNING_KEY', 'must be an Ed25519 private key as a PKCS8 PEM or a JWK with d');
  let jwk: JWK;
  try {
    if (raw.trim().startsWith('{')) jwk = JSON.parse(raw) as JWK;
    else jwk = await exportJWK(await importPKCS8(raw.replaceAll('\\n', '\n').trim(), 'EdDSA', { extractable: true }));
  } catch {
    throw bad();
  }
  if (!isEd25519Private(jwk)) throw bad();
  const clean: JWK = { kty: 'OKP', crv: 'Ed25519', x: jwk.x, d: jwk.d };
  try {
    await load({ kid: 'check', jwk: clean, createdAt: now, retiredAt: null });
  } catch {
    throw bad();
  }
  return { kid: await calculateJwkThumbprint(clean), jwk: clean, createdAt: now, retiredAt: null };
}

export async function createKeyStore(opts: {
  dataDir: string;
  overlapS: number;
  maxAgeS: number;
  given?: string;
  clock: Clock;
  log: Logger;
  /** Called with the published kids after a key leaves or joins the JWKS. */
  onChange?: (kids: string[]) => void;
}): Promise<KeyStore> {
  const { clock, log } = opts;
  const file = join(opts.dataDir, FILE);
  const overlapMs = opts.overlapS * 1000;
  const external = opts.given !== undefined;
  let keys: LoadedKey[] = [];

  const save = () => {
    if (external) return;
    const body: StoredKey[] = keys.map(({ kid, jwk, createdAt, retiredAt }) => ({ kid, jwk, createdAt, retiredAt }));
    // Write then rename, so a crash never leaves a half-written key file.
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify(body, null, 2) + '\n', { mode: 0o600 });
    chmodSync(tmp, 0o600);
    renameSync(tmp, file);
  };

  /** Drops retired keys whose overlap has ended. */
  const prune = () => {
    const t = clock.now();
    const kept = keys.filter((k) => k.retiredAt === null || k.retiredAt + overlapMs > t);
    if (kept.length !== keys.length) {
      keys = kept;
      save();
      changed();
    }
  };
  const changed = () => opts.onChange?.(keys.map((k) => k.kid));

  if (opts.given !== undefined) {
    keys = [await load(await fromVariable(opts.given, clock.now()))];
  } else if (existsSync(file)) {
    let stored: StoredKey[];
    try {
      stored = JSON.parse(readFileSync(file, 'utf8')) as StoredKey[];
      if (!Array.isArray(stored) || !stored.every((k) => typeof k.kid === 'string' && isEd25519Private(k.jwk))) throw new Error();
      keys = await Promise.all(stored.map(load));
    } catch {
      throw new ConfigError('APP_DATA_DIR', `${FILE} is not a valid identity key file; move it away to generate new keys`);
    }
    if (!keys.some((k) => k.retiredAt === null)) {
      keys.unshift(await load(await fresh(clock.now())));
      save();
    }
  } else {
    keys = [await load(await fresh(clock.now()))];
    save();
    log.info('generated the identity signing key', { kid: keys[0]!.kid });
  }

  const current = () => keys.find((k) => k.retiredAt === null)!;

  let rotating: Promise<{ kid: string; previousKid: string; previousPublishedUntil: number }> | undefined;
  // One rotation at a time; the swap itself is synchronous, so a signer never sees no current key.
  const rotate = (o: { retirePrevious?: boolean } = {}) => {
    if (external) {
      return Promise.reject(IdentityErrors.IDENTITY_KEYS_EXTERNAL('The signing key is given by APP_IDENTITY_SIGNING_KEY; rotate it there'));
    }
    return (rotating ??= (async () => {
      try {
        const next = await load(await fresh(clock.now()));
        const t = clock.now();
        const prev = current();
        prev.retiredAt = t;
        // Retired at once: no overlap, the tokens it signed stop verifying now.
        keys = [next, ...keys.filter((k) => !(o.retirePrevious && k === prev))];
        prune();
        save();
        changed();
        log.info('rotated the identity signing key', { kid: next.kid, previousKid: prev.kid, retiredAtOnce: o.retirePrevious === true });
        return { kid: next.kid, previousKid: prev.kid, previousPublishedUntil: o.retirePrevious ? t : t + overlapMs };
      } finally {
        rotating = undefined;
      }
    })());
  };

  return {
    external,
    async signing() {
      const k = current();
      if (!external && opts.maxAgeS > 0 && clock.now() - k.createdAt >= opts.maxAgeS * 1000) await rotate();
      const c = current();
      return { kid: c.kid, privateKey: c.privateKey };
    },
    publicJwks() {
      prune();
      return keys.map((k) => ({ kty: 'OKP', crv: 'Ed25519', x: k.jwk.x!, kid: k.kid, alg: 'EdDSA', use: 'sig' }) as const);
    },
    async keyFor(kid) {
      prune();
      return keys.find((k) => k.kid === kid)?.publicKey;
    },
    rotate,
    publishedKids() {
      prune();
      return keys.map((k) => k.kid);
    },
  };
}
