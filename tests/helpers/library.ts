// Library scans as a client drives them: POST /library/scans, then GET until the scan ends.
export interface ScanView {
  id: string;
  status: 'queued' | 'running' | 'done' | 'failed';
  counts: { seen: number; added: number; changed: number; unchanged: number; offline: number; failed: number };
  startedAt: number | null;
  finishedAt: number | null;
  error?: string;
}

type CatalogUrl = { url(service: 'catalog'): string } | string;
const base = (p: CatalogUrl) => (typeof p === 'string' ? p : p.url('catalog'));

export const postLibraryScan = (p: CatalogUrl, token: string | null, body: unknown = {}) =>
  fetch(base(p) + '/library/scans', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  });

export async function getLibraryScan(p: CatalogUrl, token: string, id: string): Promise<ScanView> {
  const res = await fetch(base(p) + `/library/scans/${id}`, { headers: { authorization: `Bearer ${token}` } });
  if (res.status !== 200) throw new Error(`GET /library/scans/${id} answered ${res.status}: ${await res.text()}`);
  return (await res.json()) as ScanView;
}

/** Polls until the scan is done or failed (or `until` holds); the suite's per-test limit bounds the wait. */
export async function waitForScan(p: CatalogUrl, token: string, id: string, until: (s: ScanView) => boolean = (s) => s.status === 'done' || s.status === 'failed'): Promise<ScanView> {
  for (;;) {
    const s = await getLibraryScan(p, token, id);
    if (until(s)) return s;
    await Bun.sleep(50);
  }
}

/** Queues a scan and waits for its end. */
export async function scanLibrary(p: CatalogUrl, token: string, body: unknown = {}): Promise<ScanView> {
  const res = await postLibraryScan(p, token, body);
  if (res.status !== 202) throw new Error(`POST /library/scans answered ${res.status}: ${await res.text()}`);
  const { id } = (await res.json()) as { id: string };
  return waitForScan(p, token, id);
}
