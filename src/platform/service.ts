// What main.ts hands every service, and what a service hands back.
import type { Elysia } from 'elysia';
import type { Bus } from './bus/bus';
import type { Config, Env, ServiceName } from './config';
import type { Clock, Logger } from './runtime';
import type { Store } from './store';

export interface ServiceDeps {
  config: Config;
  /** Where the service keeps its state: SQLite or PostgreSQL (APP_DATABASE_URL), one API (platform/store/store.ts). */
  store: Store;
  bus: Bus;
  log: Logger;
  clock: Clock;
  /** Aborted when the process begins to shut down: long streams end on it. */
  shutdown: AbortSignal;
  /** The URLs of the services listening in this process, filled as each starts (the media web app names them to its page). */
  peers?: Partial<Record<ServiceName, string>>;
}

export interface Service {
  // The concrete route types do not matter to main.ts, only that it can listen.
  app: Elysia<any, any, any, any, any, any, any>;
  /** Background work begun after the app listens (engine events, delivery loops). */
  start?(): Promise<void> | void;
  /** Ends background work; called on shutdown before the database closes. */
  stop?(): Promise<void> | void;
}

/**
 * A service as main.ts starts it: its own variables parsed first (main.ts parses those of every
 * named service before it opens anything, so a bad value stops start-up in one `VAR: reason` line),
 * then created with the platform's dependencies and that config.
 */
export interface ServiceDefinition<C> {
  loadConfig(env: Env): C;
  create(deps: ServiceDeps, config: C): Service | Promise<Service>;
}

export const defineService = <C>(definition: ServiceDefinition<C>) => definition;
