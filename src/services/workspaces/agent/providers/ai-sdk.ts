// The AI SDK and its two providers (~25 MB resident, ~0.1 s to load): loaded by the first agent turn,
// not with Keel, so a Keel whose agent is idle does not carry them (docs/benchmarks.md, start-up).
type AiSdk = {
  ai: typeof import('ai');
  openai: typeof import('@ai-sdk/openai');
  anthropic: typeof import('@ai-sdk/anthropic');
};

let loading: Promise<AiSdk> | undefined;
let loaded: AiSdk | undefined;

export const loadAiSdk = (): Promise<AiSdk> =>
  (loading ??= Promise.all([import('ai'), import('@ai-sdk/openai'), import('@ai-sdk/anthropic')]).then(([ai, openai, anthropic]) => (loaded = { ai, openai, anthropic })));

/** The SDK if a turn has loaded it: an error can only be one of its classes once it is loaded. */
export const aiSdkIfLoaded = (): AiSdk | undefined => loaded;
