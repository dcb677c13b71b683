// SQLite's one writer, shared fairly: transactions and the writes made beside them take turns.

/**
 * Writes in turns: each transaction, and each write made outside one while a transaction is open or
 * waiting, runs when the one before it has ended. With nothing open, a write runs at once.
 */
export function createWriteTurns() {
  let tail: Promise<unknown> = Promise.resolve();
  let taken = 0;
  return {
    get idle() {
      return taken === 0;
    },
    take<T>(run: () => T | Promise<T>): Promise<T> {
      taken++;
      const turn = tail.then(run).finally(() => taken--);
      tail = turn.catch(() => undefined);
      return turn;
    },
  };
}

