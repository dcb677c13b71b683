// The per-workspace queue: every engine task on one workspace runs after the earlier ones, one at a
// time. Operations (create, start, stop, restart, delete) are counted, so a reconciliation triggered
// by an engine event can stand aside while an operation is queued that will settle the status anyway.
import { errorFields, type Logger } from '../../../platform/runtime';

export function createTaskQueue(log: Logger) {
  const chains = new Map<string, Promise<void>>();
  const pending = new Map<string, number>();

  return {
    /** Runs `fn` after every earlier task of workspace `id`; its failure is logged, never thrown. */
    enqueue(id: string, fn: () => Promise<void>, isOperation = true): Promise<void> {
      if (isOperation) pending.set(id, (pending.get(id) ?? 0) + 1);
      const prev = chains.get(id) ?? Promise.resolve();
      const task = prev.then(async () => {
        try {
          await fn();
        } catch (e) {
          log.error('workspace task failed', { workspace: id, ...errorFields(e) });
        } finally {
          if (isOperation) {
            const n = (pending.get(id) ?? 1) - 1;
            if (n > 0) pending.set(id, n);
            else pending.delete(id);
          }
        }
      });
      chains.set(id, task);
      void task.then(() => {
        if (chains.get(id) === task) chains.delete(id);
      });
      return task;
    },

    /** Whether an operation is queued or running on workspace `id`. */
    busy(id: string): boolean {
      return (pending.get(id) ?? 0) > 0;
    },

    /** Waits for every queued task, at most `timeoutMs`. */
    async drain(timeoutMs: number): Promise<void> {
      await Promise.race([Promise.allSettled([...chains.values()]), Bun.sleep(timeoutMs)]);
    },
  };
}

export type TaskQueue = ReturnType<typeof createTaskQueue>;
