// Turns between registrations for the dispatcher (dispatcher.ts): a registration has at most
// APP_WEBHOOK_HOOK_CONCURRENCY attempts in flight, and registrations with something due are served
// in the order of their last turn (the one served longest ago first, one delivery per turn), so a
// flooded, slow or failing receiver holds only its own few slots while every other registration is
// served as soon as a slot is free. The counts live in the one dispatcher of a data directory.

export function createTurns(hookConcurrency: number) {
  /** Attempts in flight per registration. */
  const busy = new Map<string, number>();
  /** When each registration last had a turn (a counter, not a time: only the order matters). */
  const lastTurn = new Map<string, number>();
  let turns = 0;
  const busyOf = (reg: string) => busy.get(reg) ?? 0;

  return {
    /** Whether `reg` may have one more attempt in flight, beyond `claiming` being claimed now. */
    hasRoom: (reg: string, claiming = 0) => busyOf(reg) + claiming < hookConcurrency,
    /** The registrations that have room, the one served longest ago first (then the earliest due). */
    order<T extends { reg: string; at: number }>(waiting: T[]): T[] {
      return waiting.filter((w) => busyOf(w.reg) < hookConcurrency).sort((a, b) => (lastTurn.get(a.reg) ?? 0) - (lastTurn.get(b.reg) ?? 0) || a.at - b.at);
    },
    /** An attempt of `reg` is in flight: its turn is taken. */
    took(reg: string) {
      busy.set(reg, busyOf(reg) + 1);
      lastTurn.set(reg, ++turns);
    },
    /** An attempt of `reg` ended. */
    done(reg: string) {
      const n = busyOf(reg) - 1;
      if (n > 0) busy.set(reg, n);
      else busy.delete(reg);
    },
    /** Forgets registrations that no longer wait for anything (deleted ones), so the map stays bounded. */
    keepOnly(regs: Set<string>) {
      for (const reg of lastTurn.keys()) if (!regs.has(reg) && !busy.has(reg)) lastTurn.delete(reg);
    },
  };
}

export type Turns = ReturnType<typeof createTurns>;
