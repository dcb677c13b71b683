// The dashboard's files: client/index.html bundled (platform/http/client-bundle.ts), embedded in the
// single binary as KEEL_UI_ASSETS (scripts/build.ts), else built from source on first use.
import { join } from 'node:path';
import { bundleClient, clientFiles, INDEX, type ClientFile } from '../../../platform/http/client-bundle';

declare const KEEL_UI_ASSETS: string | undefined;

export type UiAsset = ClientFile;
export { INDEX };

/** Where the hashed files are served; the HTML refers to them by this prefix. */
export const ASSET_PREFIX = '/ui/assets/';

export const buildUiAssets = () => bundleClient(join(import.meta.dir, 'client', 'index.html'), ASSET_PREFIX, 'the dashboard');

export const uiAssets = clientFiles(typeof KEEL_UI_ASSETS === 'string' ? KEEL_UI_ASSETS : undefined, buildUiAssets);
