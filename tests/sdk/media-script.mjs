// Run by tests/sdk/media.test.ts with `node` where @keel/sdk was installed from its tarball: the
// media calls with an identity API key (KEEL_API_KEY) and the services' URLs (KEEL_*_URL).
import { Keel, KeelError } from '@keel/sdk';

const keel = new Keel({ url: process.env.KEEL_CATALOG_URL }); // media URLs and the API key from the environment
const out = {};

const scan = await keel.media.library.scan();
out.started = { status: scan.status, hasId: typeof scan.id === 'string' };
const done = await scan.wait({ timeoutMs: 60_000 });
out.scanned = { status: done.status, counts: done.counts };

const { works } = await keel.media.catalog.works();
out.works = works.map((w) => w.title).sort();
const file = await keel.media.catalog.scan({ path: 'Movies/Clip (2001).mp4' });
out.file = { indexed: file.indexed, path: file.asset.path, hasIndex: !!file.index };

let session;
for (let i = 0; i < 200 && !session; i++) {
  try {
    session = await keel.media.playback.session(file.asset.id, 'direct');
  } catch (e) {
    if (!(e instanceof KeelError) || e.code !== 'PLAYBACK_SOURCE_UNAVAILABLE') throw e;
    await new Promise((r) => setTimeout(r, 50));
  }
}
const res = await fetch(session.url, { headers: { range: 'bytes=0-1023' } });
out.playback = { mode: session.mode, assetId: session.assetId === file.asset.id, status: res.status, bytes: (await res.arrayBuffer()).byteLength };

try {
  await keel.media.library.scan({ path: 'nope' });
} catch (e) {
  out.problem = { isKeelError: e instanceof KeelError, status: e.status, code: e.code, retryable: e.details.retryable };
}
try {
  await new Keel({ url: process.env.KEEL_CATALOG_URL, media: { apiKey: 'keel_ak_wrong' } }).media.catalog.scan({ path: 'x.mp4' });
} catch (e) {
  out.badKey = { status: e.status, code: e.code };
}
console.log(JSON.stringify(out));
