// The floor of log fan-out on Bun: one follow of a container's log on the engine's socket, each chunk
// written as it comes to every open `GET /` SSE connection (Bun's direct stream, as Keel's adapter),
// nothing parsed, checked or encoded per line. The logs-fanout bench runs it beside Keel so that what
// Keel adds is told apart from what any Bun server pays for a thousand sockets.
// Env: DOCKER_HOST (unix:// or tcp://), CONTAINER. Prints its port, then serves until killed.
const host = process.env.DOCKER_HOST || 'unix:///var/run/docker.sock';
const sinks = new Set<{ write(b: Uint8Array): unknown; flush(): unknown }>();
const handler = {
  data(_s: unknown, chunk: Buffer) {
    const frame = Buffer.concat([Buffer.from('data: '), chunk, Buffer.from('\n\n')]);
    for (const sink of sinks) {
      sink.write(frame);
      sink.flush();
    }
  },
};
const engine = host.startsWith('unix://')
  ? await Bun.connect({ unix: host.slice('unix://'.length), socket: handler })
  : await Bun.connect({ hostname: new URL(host).hostname, port: Number(new URL(host).port), socket: handler });
engine.write(`GET /containers/${process.env.CONTAINER}/logs?follow=1&stdout=1&stderr=1&timestamps=1&tail=0 HTTP/1.1\r\nHost: docker\r\n\r\n`);

const server = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  idleTimeout: 0,
  fetch(req) {
    const body = new ReadableStream({
      type: 'direct',
      pull(sink: { write(b: Uint8Array | string): unknown; flush(): unknown }) {
        sink.write(': connected\n\n');
        sink.flush();
        sinks.add(sink);
        return new Promise<void>((resolve) =>
          req.signal.addEventListener('abort', () => {
            sinks.delete(sink);
            resolve();
          }),
        );
      },
    } as unknown as UnderlyingDefaultSource<Uint8Array>);
    return new Response(body, { headers: { 'content-type': 'text/event-stream' } });
  },
});
console.log(server.port);
export {};
