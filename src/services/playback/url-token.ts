// The signed, expiring token in a session's URL path: players and <video> cannot send headers, so the
// URL itself is the credential. HMAC-SHA256 under a key derived from APP_API_SECRET, which every
// process of one Keel shares, so any replica of the service accepts any session's URL.
import { createHmac, timingSafeEqual } from 'node:crypto';

export interface UrlClaims {
  /** session id */
  sid: string;
  assetId: string;
  mode: 'direct' | 'hls';
  /** expiry, Unix epoch seconds */
  exp: number;
}

export function createUrlSigner(apiSecret: string) {
  const key = createHmac('sha256', apiSecret).update('keel playback url v1').digest();
  const mac = (body: string) => createHmac('sha256', key).update(body).digest().subarray(0, 24);

  return {
    sign(claims: UrlClaims): string {
      const body = Buffer.from(JSON.stringify([claims.sid, claims.assetId, claims.mode, claims.exp])).toString('base64url');
      return `${body}.${mac(body).toString('base64url')}`;
    },
    /** The claims of a well-signed, unexpired token; null otherwise (the caller cannot tell which). */
    verify(token: string, nowMs: number): UrlClaims | null {
      const [body, sig, extra] = token.split('.');
      if (!body || !sig || extra !== undefined || token.length > 1024) return null;
      const given = Buffer.from(sig, 'base64url');
      const want = mac(body);
      if (given.length !== want.length || !timingSafeEqual(given, want)) return null;
      try {
        const [sid, assetId, mode, exp] = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
        if (typeof exp !== 'number' || exp * 1000 <= nowMs) return null;
        return { sid, assetId, mode, exp };
      } catch {
        return null;
      }
    },
  };
}

export type UrlSigner = ReturnType<typeof createUrlSigner>;
