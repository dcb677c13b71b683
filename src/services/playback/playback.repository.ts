// Every query of the playback service, on the Store: session rows written at creation, read by each
// request of a session URL, ended by DELETE, and forgotten a day after they expired.
import { and, eq, isNull, lt } from 'drizzle-orm';
import type { Store } from '../../platform/store';
import { playbackTables, type PlaybackSessionRow } from './playback.tables';

export function createPlaybackRepository(store: Store) {
  const db = store.orm;
  const { playbackSessions: sessions } = playbackTables(store.dialect);

  return {
    async insert(row: PlaybackSessionRow): Promise<void> {
      await db.insert(sessions).values(row);
    },

    async find(id: string): Promise<PlaybackSessionRow | undefined> {
      return (await db.select().from(sessions).where(eq(sessions.id, id)).limit(1))[0];
    },

    /** Ends a session once; a second call leaves the first end time. Answers the row as it now is. */
    async end(id: string, at: number): Promise<PlaybackSessionRow | undefined> {
      const [ended] = await db
        .update(sessions)
        .set({ endedAt: at })
        .where(and(eq(sessions.id, id), isNull(sessions.endedAt)))
        .returning();
      return ended ?? (await this.find(id));
    },

    /** Removes rows whose URL expired before `cutoff`: nothing can present them any more. */
    async sweep(cutoff: number): Promise<void> {
      await db.delete(sessions).where(lt(sessions.expiresAt, cutoff));
    },
  };
}

export type PlaybackRepository = ReturnType<typeof createPlaybackRepository>;
