// Compare-and-set records on a JetStream stream, what the job queue needs of a key-value store:
// one message per subject is kept (the record), its stream sequence is its revision, and every write
// says which revision it expects (Nats-Expected-Last-Subject-Sequence), so of two writers of one
// revision exactly one wins. A removal is a marker message, itself a revision, so a removal too can
// be conditional. Written on @nats-io/jetstream alone (a KV bucket is the same thing underneath).
import { headers } from '@nats-io/transport-node';
import { JetStreamApiError, StorageType, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';

const REMOVED = 'Keel-Removed';
const enc = new TextEncoder();

export interface Record {
  rev: number;
  value: string;
}

export interface StateStore {
  /** The live record, or nothing (never written, removed, or expired). */
  read(key: string): Promise<Record | undefined>;
  /** Writes a record that is not there (or was removed); false if one is. */
  create(key: string, value: string): Promise<boolean>;
  /** Replaces revision `rev`; false if the record changed since. */
  update(key: string, value: string, rev: number): Promise<boolean>;
  /** Removes revision `rev`; false if the record changed since. */
  remove(key: string, rev: number): Promise<boolean>;
}

/** A failed expectation (10071: wrong last sequence) answers false; anything else is a failure. */
async function expecting(write: Promise<unknown>): Promise<boolean> {
  try {
    await write;
    return true;
  } catch (e) {
    if (e instanceof JetStreamApiError) return false;
    throw e;
  }
}

export async function openStateStore(jsm: JetStreamManager, js: JetStreamClient, opts: { stream: string; prefix: string; keepMs: number }): Promise<StateStore> {
  const config = {
    name: opts.stream,
    subjects: [`${opts.prefix}.>`],
    storage: StorageType.File,
    max_msgs_per_subject: 1,
    max_age: opts.keepMs * 1e6,
    allow_rollup_hdrs: false,
  };
  const made = await jsm.streams.info(opts.stream).catch(() => undefined);
  if (!made) await jsm.streams.add(config).catch(async (e) => (await jsm.streams.info(opts.stream).catch(() => undefined)) ?? Promise.reject(e));
  const subject = (key: string) => `${opts.prefix}.${key}`;

  async function last(key: string): Promise<{ rev: number; value?: string } | undefined> {
    const m = await jsm.streams.getMessage(opts.stream, { last_by_subj: subject(key) });
    if (!m) return undefined;
    return { rev: m.seq, value: m.header?.get(REMOVED) ? undefined : m.string() };
  }

  const write = (key: string, value: string, expected: number, removed = false) => {
    const h = removed ? headers() : undefined;
    h?.set(REMOVED, '1');
    return js.publish(subject(key), enc.encode(value), { expect: { lastSubjectSequence: expected }, headers: h, timeout: 5000 });
  };

  return {
    async read(key) {
      const r = await last(key);
      return r && r.value !== undefined ? { rev: r.rev, value: r.value } : undefined;
    },
    async create(key, value) {
      const r = await last(key);
      if (r && r.value !== undefined) return false;
      return expecting(write(key, value, r?.rev ?? 0));
    },
    update: (key, value, rev) => expecting(write(key, value, rev)),
    remove: (key, rev) => expecting(write(key, '', rev, true)),
  };
}
