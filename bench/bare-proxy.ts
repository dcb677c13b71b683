// The floor of an HTTP proxy written on Bun: Bun.serve passing each request to one upstream with
// fetch, nothing checked or rewritten. The previews bench runs it beside Keel's preview listener so
// that what Keel adds is told apart from what any Bun proxy costs. Env: TARGET (http://addr:port), PORT.
const target = process.env.TARGET!;
const server = Bun.serve({
  hostname: '127.0.0.1',
  port: Number(process.env.PORT ?? 0),
  fetch(req) {
    const path = req.url.slice(req.url.indexOf('/', req.url.indexOf('//') + 2));
    return fetch(target + path, { method: req.method, headers: req.headers, redirect: 'manual', decompress: false } as RequestInit);
  },
});
console.log(server.port);
