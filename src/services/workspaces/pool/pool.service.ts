// The warm pool (APP_WARM_POOL): per template, containers made ahead of time, each with its own
// volume, network, firewall rules and ports, already running, so a create it can serve is `running`
// as soon as its row is stored. Entries live only in this process's memory and on the engine, never
// in the workspaces table: no actor lists, counts or reaches them. A claim records the entry as the
// new workspace's row (its id, ports, volume and container) and the entry leaves the pool for good;
// nothing is ever reused after a claim, so a workspace never carries anything of another.
//
// The id is pre-allocated: the container's env is fixed at creation and KEEL_CODE_SECRET is
// HMAC(key, workspace id) (lifecycle/code-secret.ts), so the entry is made under the id the workspace gets
// when claimed. What is fixed at creation and cannot follow the claim: the hostname and
// KEEL_WORKSPACE_NAME (`warm-<id tail>`), the container's name and its owner label (empty, with
// LABEL_POOL); the row is what says who owns the workspace (docs/workspaces.md, "Warm pool").
//
// A graceful close removes the ready entries. A crash: entries of a previous run belong to no row, so
// start-up reconciliation removes them like any unowned object (container, network and rules,
// volume) and the pool is made again;
// an entry whose claim committed its row is a workspace like any other. A smaller APP_WARM_POOL
// therefore takes effect at the next start.
//
// A public template (templates/) is named in APP_WARM_POOL by its name, which means the same to every
// caller: its entries are of its ready version. A rebuild or a delete makes the waiting entries of the
// old version go (`refresh`); a name with no ready public template yet is looked up again later.
import { errorFields, isoNow, newId, type Clock, type Logger } from '../../../platform/runtime';
import type { Engine } from '../engine/engine';
import type { Engines } from '../engine/engines';
import type { Firewalls } from '../network/firewalls';
import { templateImage } from '../images/template-image';
import type { Template, TemplateRegistry } from '../images/templates';
import type { WorkspacesConfig } from '../workspaces.config';
import type { WorkspaceRow } from '../workspaces.tables';
import type { Provisioner } from '../lifecycle/provision';
import { volumeOf, type WarmEntry } from '../lifecycle/ports';
import { MiB } from '../lifecycle/stats';

/** After a failed entry, the template's refill waits this long (an engine in trouble is not hammered). */
const RETRY_MS = 5_000;
/** A pool name that is no template yet (a public one not built, not made yet) is looked up again this often. */
const LOOKUP_MS = 30_000;

export function createWarmPool(deps: {
  settings: WorkspacesConfig;
  templates: TemplateRegistry;
  engine: Engine;
  engines: Engines;
  firewall: Firewalls;
  provisioner: Provisioner;
  holdPorts: (hold: (ports: [number, number, number]) => void) => Promise<[number, number, number] | null>;
  /** A name that is no built-in: the public template of that name, at its ready version (none: undefined). */
  lookup?: (name: string) => Promise<Template | undefined>;
  clock: Clock;
  log: Logger;
}) {
  const { engine, engines, log } = deps;
  const sizes = Object.entries(deps.settings.warmPool).filter(([, n]) => n > 0);
  const ready = new Map<string, WarmEntry[]>(sizes.map(([t]) => [t, []]));
  const making = new Map<string, number>(sizes.map(([t]) => [t, 0]));
  /** Every entry not yet recorded as a workspace (ready, being made, being claimed): reconcile keeps their objects. */
  const entries = new Map<string, { engine: string | null; template: string; ports: number[] }>();
  /** Pool names already reported as naming no template (reported once). */
  const unknown = new Set<string>();
  const pausedUntil = new Map<string, number>();
  let active = 0;
  let running = false;
  let timer: ReturnType<typeof setTimeout> | undefined;

  function fill() {
    if (!running) return;
    for (const [template, size] of sizes) {
      const short = () => ready.get(template)!.length + making.get(template)! < size;
      const until = pausedUntil.get(template) ?? 0;
      // A template waiting after a failure is looked at again when its wait ends.
      if (short() && until > deps.clock.now() && Number.isFinite(until)) wakeAt(until);
      while (active < deps.settings.warmPoolConcurrency && short() && until <= deps.clock.now()) {
        active++;
        making.set(template, making.get(template)! + 1);
        void make(template).finally(() => {
          active--;
          making.set(template, making.get(template)! - 1);
          fill();
        });
      }
    }
  }

  function wakeAt(at: number) {
    if (timer) return;
    timer = setTimeout(() => {
      timer = undefined;
      fill();
    }, Math.max(0, at - deps.clock.now()));
  }

  /** Drops an entry from the engine: container, volume, then the network with its rules (as a delete does). */
  async function discard(id: string, containerId: string | null) {
    try {
      if (containerId) await engine.remove(containerId);
      await engine.removeVolume(volumeOf(id));
      await deps.provisioner.removeNetwork(id);
    } catch (e) {
      // Left for start-up reconciliation, which removes objects no workspace owns.
      log.warn('warm pool entry not removed', { entry: id, ...errorFields(e) });
    } finally {
      entries.delete(id);
    }
  }

  /** What a pool name means now: a built-in, or a public template's ready version. */
  async function current(name: string): Promise<Template | undefined> {
    return deps.templates.get(name) ?? (await deps.lookup?.(name).catch((e) => void log.warn('warm pool template not looked up', { template: name, ...errorFields(e) })));
  }

  async function make(templateName: string) {
    const template = await current(templateName);
    if (!template) {
      if (!unknown.has(templateName)) log.warn('APP_WARM_POOL names no built-in or ready public template; no entries for it yet', { template: templateName });
      unknown.add(templateName);
      // A public template may be made or finish its build later: looked up again (refresh() does at once).
      pausedUntil.set(templateName, deps.lookup ? deps.clock.now() + LOOKUP_MS : Number.POSITIVE_INFINITY);
      return;
    }
    unknown.delete(templateName);
    const id = newId('ws', deps.clock);
    let containerId: string | null = null;
    try {
      const placed = await engines.place(templateImage(template, deps.settings), template.resources.memoryMb * MiB);
      const isolation = await deps.firewall.of(placed).status();
      if (!isolation.active && engines.settingsOf(placed).firewall === 'required') throw new Error(`network isolation is unavailable: ${isolation.reason}`);
      const recorded = engines.names.length > 1 ? placed : null;
      entries.set(id, { engine: recorded, template: template.name, ports: [] });
      const ports = await deps.holdPorts((p) => entries.set(id, { engine: recorded, template: template.name, ports: p }));
      if (!ports) throw new Error('no free port is left in APP_WORKSPACE_PORT_RANGE');
      const [port, sshPort, rdpPort] = ports;
      const now = isoNow(deps.clock);
      // The workspace-to-be, as provisioning reads it; it is not stored until a claim.
      const row: WorkspaceRow = {
        id, name: `warm-${id.slice(-6).toLowerCase()}`, owner: '', template: template.name, type: 'persistent', status: 'creating',
        port, sshPort, rdpPort, containerId: null, engine: recorded, volume: volumeOf(id), provisioned: false,
        repoUrl: null, repoBranch: null, reason: null, autoStopMinutes: 0, stopReason: null, snapshotId: null, createdAt: now, updatedAt: now,
      };
      containerId = await deps.provisioner.makeWarm(row, template);
      if (!running) throw new Error('Keel is closing');
      // A rebuild or a delete while it was made (refresh() saw no entry to drop): it is of a replaced version.
      if (!deps.templates.get(templateName) && (await current(templateName))?.name !== template.name) throw new Error('its template was replaced while the entry was made');
      ready.get(templateName)!.push({ id, pool: templateName, template: template.name, engine: recorded, port, sshPort, rdpPort, volume: row.volume, containerId });
      log.debug('warm pool entry ready', { template: templateName, entry: id });
    } catch (e) {
      if (running) {
        log.warn('warm pool entry not made; retrying later', { template: templateName, ...errorFields(e) });
        pausedUntil.set(templateName, deps.clock.now() + RETRY_MS);
      }
      await discard(id, containerId);
    }
  }

  /** Drops the waiting entries of pool `name` that are not of `template` (its current meaning). */
  function dropStale(name: string, template: string | undefined) {
    const list = ready.get(name);
    if (!list) return;
    const stale = list.filter((e) => e.template !== template);
    if (!stale.length) return;
    list.splice(0, list.length, ...list.filter((e) => e.template === template));
    for (const e of stale) void discard(e.id, e.containerId);
    log.info('warm pool entries of a replaced template version removed', { template: name, count: stale.length });
    fill();
  }

  return {
    /** Whether creates of `template` may be served from the pool (it has a size for it). */
    serves: (template: string) => ready.has(template),

    /**
     * A ready entry of pool `name` whose template is `template` (the registry name the create
     * resolved), taken out of the pool (null when none is ready: the create goes cold). Entries of a
     * version that is no longer `name`'s go; a caller whose own template shadows a public one of that
     * name gets none. An entry whose container no longer runs is dropped. The taker must call
     * `claimed` once the row is stored, or `giveBack` when the create was refused before (name
     * taken, quota).
     */
    async take(name: string, template: string): Promise<WarmEntry | null> {
      const list = ready.get(name);
      if (!list?.length) return null;
      const now = await current(name);
      dropStale(name, now?.name);
      if (now?.name !== template) return null;
      while (list.length) {
        const entry = list.shift()!;
        fill();
        const state = await engine.inspect(entry.containerId).catch(() => null);
        if (state?.running && !state.paused) return entry;
        log.warn('warm pool entry found not running; dropped', { entry: entry.id });
        void discard(entry.id, entry.containerId);
      }
      return null;
    },

    /** The entry is a workspace now (its row holds the ports and names its objects). */
    claimed(entry: WarmEntry) {
      entries.delete(entry.id);
    },

    /** An entry taken for a create that was refused: nobody used it, it goes back to the front. */
    giveBack(entry: WarmEntry) {
      ready.get(entry.pool)?.unshift(entry);
    },

    /**
     * A public template changed (a version became ready, or it was deleted): waiting entries of what
     * their name no longer means go, and names waiting for a template are looked up again now.
     */
    async refresh(): Promise<void> {
      if (!running) return;
      for (const name of ready.keys()) {
        if (deps.templates.get(name)) continue;
        dropStale(name, (await current(name))?.name);
        if (pausedUntil.get(name) === Infinity || unknown.has(name)) pausedUntil.delete(name);
      }
      fill();
    },

    /** Ports held by entries (reservations never hand them to a create). */
    heldPorts: (): number[] => [...entries.values()].flatMap((e) => e.ports),

    /** Ids of entries not recorded as workspaces: their containers, networks and volumes are not orphans. */
    ids: (): Set<string> => new Set(entries.keys()),

    /** Entries on engine `name` and the memory their templates ask: they hold it like running workspaces (placement). */
    load(name: string): { active: number; memoryBytes: number } {
      let active = 0;
      let memoryBytes = 0;
      for (const e of entries.values()) {
        if (engines.nameOf(e.engine) !== name) continue;
        active++;
        memoryBytes += (deps.templates.get(e.template)?.resources.memoryMb ?? 0) * MiB;
      }
      return { active, memoryBytes };
    },

    /** The engine of an entry (engines route its calls by it before any row exists). */
    engineOf: (id: string): string | null | undefined => entries.get(id)?.engine,

    /** Starts filling (after start-up reconciliation removed a previous run's entries). */
    start() {
      if (!sizes.length) return;
      running = true;
      fill();
    },

    /**
     * Stops refilling and removes the ready entries (a Keel that is not started again leaves nothing
     * behind). What a bounded close cuts short, or an entry still being made, the next start-up removes.
     */
    async stop(waitMs: number): Promise<void> {
      running = false;
      if (timer) clearTimeout(timer);
      const all = [...ready.values()].flatMap((list) => list.splice(0));
      await Promise.race([Promise.all(all.map((e) => discard(e.id, e.containerId))), Bun.sleep(waitMs)]);
    },
  };
}

export type WarmPool = ReturnType<typeof createWarmPool>;
