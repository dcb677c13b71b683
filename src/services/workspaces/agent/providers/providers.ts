// The only module that talks to model APIs: it turns `provider/name` into an AI SDK model and a
// provider's failure into UPSTREAM_ERROR with the provider's reason (credentials scrubbed).
// OpenAI goes through Chat Completions (`.chat()`), the API every compatible server implements.
import type { APICallError, LanguageModelMiddleware } from 'ai';
import { aiSdkIfLoaded, loadAiSdk } from './ai-sdk';
import { AppError } from '../../../../platform/errors';
import { WorkspaceErrors } from '../../workspaces.errors';
import type { ProviderSettings } from '../agent.config';

export const PROVIDER_NAMES = ['openai', 'anthropic'] as const;
export type ProviderName = (typeof PROVIDER_NAMES)[number];

const REASON_MAX = 500;

export function createProviders(settings: ProviderSettings) {
  const configured = PROVIDER_NAMES.filter((p) => settings[p]);
  // Each provider's client is made by the first turn that uses it (the SDK loads then: ai-sdk.ts).
  let clients: Promise<{ openai?: ReturnType<typeof import('@ai-sdk/openai').createOpenAI>; anthropic?: ReturnType<typeof import('@ai-sdk/anthropic').createAnthropic> }> | undefined;
  const providerClients = () =>
    (clients ??= loadAiSdk().then((sdk) => ({
      openai: settings.openai && sdk.openai.createOpenAI({ apiKey: settings.openai.apiKey, baseURL: settings.openai.baseURL }),
      anthropic: settings.anthropic && sdk.anthropic.createAnthropic({ apiKey: settings.anthropic.apiKey, baseURL: settings.anthropic.baseURL }),
    })));
  const secrets = [settings.openai?.apiKey, settings.anthropic?.apiKey].filter((s): s is string => !!s && s.length >= 4);

  /** Removes configured keys and anything shaped like a key from a provider's message. */
  const scrubReason = (text: string) => {
    let out = text;
    for (const s of secrets) out = out.split(s).join('[redacted]');
    return out.replace(/\b(sk|pk|rk)-[A-Za-z0-9_*-]{6,}/g, '[redacted]').replace(/Bearer\s+\S+/gi, 'Bearer [redacted]');
  };

  return {
    configured,

    /** Checks `provider/name` against what is configured; the message names the configured providers. */
    check(model: string): { provider: ProviderName; name: string } {
      const slash = model.indexOf('/');
      const provider = model.slice(0, slash);
      const name = model.slice(slash + 1);
      if (slash <= 0 || !name) {
        throw WorkspaceErrors.INVALID_REQUEST('model must be `provider/name`, e.g. openai/gpt-4o-mini', { property: '/model', configured });
      }
      if (!(configured as string[]).includes(provider)) {
        const list = configured.length ? configured.join(', ') : 'none (set OPENAI_API_KEY, OPENAI_BASE_URL or ANTHROPIC_API_KEY)';
        // The received name is not repeated (nothing a client sent comes back in an error).
        throw WorkspaceErrors.INVALID_REQUEST(`the model's provider is not configured; configured providers: ${list}`, { property: '/model', configured });
      }
      return { provider: provider as ProviderName, name };
    },

    /**
     * The model, reporting the usage of each provider call as soon as that call's answer ends: the
     * SDK reports a step's usage only after its tools ran, and a turn cancelled during a tool must
     * still count the call that asked for it.
     */
    async model(model: string, opts: { idleTimeoutMs: number; onCallUsage: (u: CallUsage) => void }) {
      const { provider, name } = this.check(model);
      const [{ openai, anthropic }, sdk] = await Promise.all([providerClients(), loadAiSdk()]);
      return sdk.ai.wrapLanguageModel({ model: provider === 'openai' ? openai!.chat(name) : anthropic!(name), middleware: callWatch(opts) });
    },

    /** A provider failure as the API reports it: 502 UPSTREAM_ERROR, the provider's status and reason. */
    failure(e: unknown, model: string): AppError {
      if (e instanceof AppError) return e;
      // Not loaded: no provider call was made, so the error is none of the SDK's.
      const sdk = aiSdkIfLoaded()?.ai;
      const retried = sdk?.RetryError.isInstance(e) ? e : undefined;
      const last = retried ? retried.lastError : e;
      const attempts = retried ? retried.errors.length : 1;
      let status: number | undefined;
      let reason: string;
      if (sdk?.APICallError.isInstance(last)) {
        status = last.statusCode;
        reason = providerMessage(last) ?? last.message;
      } else reason = last instanceof Error ? last.message : String(last);
      reason = scrubReason(reason).slice(0, REASON_MAX);
      const provider = model.slice(0, model.indexOf('/'));
      return WorkspaceErrors.UPSTREAM_ERROR(`the model provider failed${status ? ` (HTTP ${status})` : ''}: ${reason}`, { provider, ...(status ? { status } : {}), attempts });
    },
  };
}

export interface CallUsage {
  promptTokens: number;
  completionTokens: number;
}

/**
 * Watches each provider call: its usage as soon as its answer ends, and its silence. A provider that
 * sends nothing for `idleTimeoutMs` (before its headers or between two chunks) has its request aborted
 * and the call fails with a timeout, so a stalled provider is an UPSTREAM_ERROR, not a turn that hangs
 * until its wall-time limit. The SDK's own chunk timeout is not used: it also runs while tools execute.
 */
function callWatch(opts: { idleTimeoutMs: number; onCallUsage: (u: CallUsage) => void }): LanguageModelMiddleware {
  return {
    specificationVersion: 'v3',
    async wrapStream({ params, model }) {
      const ac = new AbortController();
      const outer = params.abortSignal;
      const stalled = new Error(`the provider sent nothing for ${opts.idleTimeoutMs} ms`);
      let timer: ReturnType<typeof setTimeout> | undefined;
      let out: TransformStreamDefaultController<unknown> | undefined;
      const done = () => {
        clearTimeout(timer);
        outer?.removeEventListener('abort', onOuter);
      };
      const onOuter = () => {
        done();
        ac.abort(outer?.reason);
      };
      const arm = () => {
        clearTimeout(timer);
        timer = setTimeout(() => {
          ac.abort(stalled);
          out?.error(stalled);
        }, opts.idleTimeoutMs);
      };
      if (outer?.aborted) ac.abort(outer.reason);
      else outer?.addEventListener('abort', onOuter, { once: true });
      arm();
      let r: Awaited<ReturnType<typeof model.doStream>>;
      try {
        r = await model.doStream({ ...params, abortSignal: ac.signal });
      } catch (e) {
        done();
        throw ac.signal.reason === stalled ? stalled : e;
      }
      arm();
      const tap = new TransformStream<(typeof r.stream extends ReadableStream<infer P> ? P : never)>({
        start(c) {
          out = c as TransformStreamDefaultController<unknown>;
        },
        transform(part, c) {
          arm();
          if (part.type === 'finish') {
            done();
            opts.onCallUsage({ promptTokens: part.usage.inputTokens.total ?? 0, completionTokens: part.usage.outputTokens.total ?? 0 });
          }
          c.enqueue(part);
        },
        flush: done,
      });
      return { ...r, stream: r.stream.pipeThrough(tap) };
    },
  };
}

/** The `error.message` of an OpenAI- or Anthropic-style error body, when there is one. */
function providerMessage(e: APICallError): string | undefined {
  try {
    const body = JSON.parse(e.responseBody ?? '') as { error?: { message?: unknown } | string; message?: unknown };
    if (typeof body.error === 'string') return body.error;
    if (typeof body.error?.message === 'string') return body.error.message;
    if (typeof body.message === 'string') return body.message;
  } catch {}
  return undefined;
}

export type Providers = ReturnType<typeof createProviders>;
