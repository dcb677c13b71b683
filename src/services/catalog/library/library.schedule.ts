// Scans every media root on a fixed interval (APP_LIBRARY_SCAN_INTERVAL_S; 0 = never). Several
// catalog replicas may all tick: the workers' dedup by key leaves one pending scan.
import { errorFields, type Logger } from '../../../platform/runtime';
import type { LibraryService } from './library.service';

export function scheduleLibraryScans(library: LibraryService, intervalS: number, log: Logger): () => void {
  if (intervalS <= 0) return () => {};
  const timer = setInterval(() => {
    library.startScan({}).then(
      (s) => log.info('scheduled library scan queued', { scanId: s.id }),
      (e) => log.warn('scheduled library scan not queued', errorFields(e)),
    );
  }, intervalS * 1000);
  return () => clearInterval(timer);
}
