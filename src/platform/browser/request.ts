/// <reference lib="dom" />
// How Keel's browser apps fetch: a read whose connection broke is sent again.

/**
 * fetch, with a GET whose connection failed sent again (twice, after 0.2 and 0.6 s): a browser on the
 * engine's machine aborts what is in flight when a network interface comes or goes (Chromium:
 * ERR_NETWORK_CHANGED), and the engine adds one for every workspace network. Other methods are
 * never repeated: the first may have been done.
 */
export async function request(path: string, init: RequestInit): Promise<Response> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await fetch(path, init);
    } catch (e) {
      const again = (init.method ?? 'GET') === 'GET' && e instanceof TypeError && !init.signal?.aborted && attempt < 2;
      if (!again) throw e;
      await new Promise((resolve) => setTimeout(resolve, 200 * 3 ** attempt));
    }
  }
}
