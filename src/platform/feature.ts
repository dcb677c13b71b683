// The one shape of a feature module: what a service's composition root (its index.ts) lists. A
// feature is built by `create<Feature>(deps)` from the platform's parts and the service objects of
// the features it uses, and hands back its service object (the rules), its routes (one Elysia
// plugin, mounted in list order), its named models (OpenAPI components), and what it does on the
// bus and in the background. The root mounts, subscribes, starts and stops the list; it holds no
// rules of its own.
import type { AnyElysia } from 'elysia';
import type { Bus } from './bus/bus';

export interface Feature<S = unknown> {
  /** The feature's rules (its `*.service.ts` object): what other features are given, never its deps. */
  service: S;
  /** Its HTTP routes, one plugin (its `*.routes.ts`). */
  routes?: AnyElysia;
  /** Its `*.model.ts` modules: the `t.*` shapes named in the OpenAPI document. */
  models?: Record<string, unknown>[];
  /** Its bus subscriptions; returns what ends them. Called by the service's start() before its first await. */
  listen?(bus: Bus): () => void;
  /** Background work begun once the service listens (recovery, loops, a listener of its own). */
  start?(): Promise<void> | void;
  /** Ends that work; called on shutdown before the database closes. */
  stop?(): Promise<void> | void;
}

/** Every route plugin of `features`, in list order (the order of the OpenAPI document's paths). */
export function mountFeatures<A extends AnyElysia>(app: A, features: Feature[]): A {
  let mounted: AnyElysia = app;
  for (const f of features) if (f.routes) mounted = mounted.use(f.routes);
  return mounted as A;
}

/** Subscribes every feature that listens; returns what ends all of them. */
export function listenFeatures(features: Feature[], bus: Bus): () => void {
  const offs = features.flatMap((f) => (f.listen ? [f.listen(bus)] : []));
  return () => {
    for (const off of offs.splice(0)) off();
  };
}

/**
 * The plain lifetime of a list: start() subscribes every feature (before its first await) and starts
 * them in list order; stop() ends the subscriptions first (no new work comes in), then stops the
 * features in reverse. A service whose features need another order says so with lists of its own
 * (the workspaces service).
 */
export function featuresLifetime(features: Feature[], bus: Bus) {
  let stopListening = () => {};
  return {
    async start(): Promise<void> {
      stopListening = listenFeatures(features, bus);
      for (const f of features) await f.start?.();
    },
    async stop(): Promise<void> {
      stopListening();
      for (const f of [...features].reverse()) await f.stop?.();
    },
  };
}
