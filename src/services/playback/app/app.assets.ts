// The media web app's files: client/index.html bundled (platform/http/client-bundle.ts, hls.js in a
// chunk of its own loaded on Play), embedded in the single binary as KEEL_MEDIA_APP_ASSETS
// (scripts/build.ts), else built from source on first use.
import { join } from 'node:path';
import { bundleClient, clientFiles } from '../../../platform/http/client-bundle';

declare const KEEL_MEDIA_APP_ASSETS: string | undefined;

/** Where the hashed files are served; the HTML refers to them by this prefix. */
export const APP_ASSET_PREFIX = '/app/assets/';

export const buildMediaAppAssets = () => bundleClient(join(import.meta.dir, 'client', 'index.html'), APP_ASSET_PREFIX, 'the media web app');

export const mediaAppAssets = clientFiles(typeof KEEL_MEDIA_APP_ASSETS === 'string' ? KEEL_MEDIA_APP_ASSETS : undefined, buildMediaAppAssets);
