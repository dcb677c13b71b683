// The per-workspace secret that guards a workspace's code server (docs/security.md#code-server).
// It is HMAC-SHA256(key, workspace id), the key kept in the data dir (0600) beside the instance id:
// nothing to store per workspace, the same secret whenever a container is recreated, and a rotation
// is a new key file (containers made before keep the old secret until they are recreated).
// The container gets it as KEEL_CODE_SECRET; the template's code server asks for it as HTTP Basic
// credentials `keel:<secret>`, and only the owner (or an admin) sees it, inside urls.codeServer.
import { createHmac, randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const CODE_SECRET_ENV = 'KEEL_CODE_SECRET';
export const CODE_SECRET_USER = 'keel';

/** The key in `dataDir` (made on first use, readable by Keel's user only). */
export function loadCodeKey(dataDir: string): Buffer {
  const file = join(dataDir, 'workspaces-code-key');
  if (existsSync(file)) {
    const key = Buffer.from(readFileSync(file, 'utf8').trim(), 'base64url');
    if (key.length >= 32) return key;
  }
  const key = randomBytes(32);
  writeFileSync(file, key.toString('base64url') + '\n', { mode: 0o600 });
  return key;
}

/** The workspace's secret: 43 base64url characters (no ':' or '@', so it sits in a URL's userinfo as is). */
export const codeSecret = (key: Buffer, workspaceId: string) => createHmac('sha256', key).update(`code-server:${workspaceId}`).digest('base64url');

/** `http://keel:<secret>@host:port` */
export const codeServerUrl = (publicHost: string, port: number, secret: string) => `http://${CODE_SECRET_USER}:${secret}@${publicHost}:${port}`;
