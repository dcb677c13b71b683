// PostgreSQL's change counter as cached reads see it: heard by LISTEN/NOTIFY, read again (coalesced)
// while the listening connection has not proven itself.
import type { SQL } from 'bun';

/** The channel keel_changed() notifies at every committed write (countChanges below). */
const CHANGES_CHANNEL = 'keel_changes';
/** How often the listening connection proves it still delivers: a change is missed at most twice this long. */
const HEARTBEAT_MS = 1000;

/**
 * The change counter without a round trip: every committed write notifies CHANGES_CHANNEL (the
 * trigger of countChanges), and each notification, like each write of this process, moves a number
 * kept here. The listening connection can drop without a word, so it must prove itself: every
 * HEARTBEAT_MS this process notifies itself, and a heartbeat not back by the next one means it is
 * not listening; until one comes back the counter is read from keel_changes again (`readCounter`,
 * coalesced), so a reader is never left on stale data. Notifications arrive in commit order, so a
 * heartbeat back means every change committed before it was heard. Values of the two ways differ in
 * their first letter, and the number moves when listening resumes (what was missed meanwhile).
 */
export async function listenForChanges(client: SQL, readCounter: () => Promise<string>) {
  const me = `heartbeat:${crypto.randomUUID()}:`;
  let moves = 0;
  let listening = false;
  let sent = 0;
  let heard = 0;
  const counted = coalescedVersion(readCounter);
  const moved = () => {
    moves++;
  };
  const hear = (resumed: boolean) => {
    if (!listening || resumed) moves++;
    listening = true;
  };
  const subscription = await client.listen(
    CHANGES_CHANNEL,
    (payload) => {
      if (!payload.startsWith('heartbeat:')) moves++;
      else if (payload.startsWith(me) && Number(payload.slice(me.length)) === sent) {
        heard = sent;
        hear(false);
      }
    },
    () => hear(true), // (again after a reconnection: what came meanwhile was not heard)
  );
  const beat = setInterval(() => {
    if (heard !== sent) listening = false;
    client.notify(CHANGES_CHANNEL, me + ++sent).catch(() => {
      listening = false;
    });
  }, HEARTBEAT_MS);
  beat.unref?.();
  return {
    moved,
    version: (): string | Promise<string> => (listening ? `n${moves}` : counted().then((v) => `c${v}.${moves}`)),
    async close() {
      clearInterval(beat);
      await subscription.unlisten().catch(() => undefined);
    },
  };
}

/**
 * The change counter read for many requests at once: a read answers every request that arrived
 * before it started, and a request that arrives while one is in flight waits for the next, which
 * starts when that one ends. A write committed before a request arrived is always seen (the read
 * it gets started after it), and under load one round trip serves a whole batch of cached reads
 * instead of one each.
 */
export function coalescedVersion(read: () => Promise<string>): () => Promise<string> {
  let inFlight: Promise<string> | undefined;
  let queued: Promise<string> | undefined;
  const start = () => {
    const p = read().finally(() => {
      if (inFlight === p) inFlight = undefined;
    });
    inFlight = p;
    return p;
  };
  return () => {
    if (!inFlight) return start();
    return (queued ??= inFlight
      .catch(() => undefined)
      .then(() => {
        queued = undefined;
        return start();
      }));
  };
}

