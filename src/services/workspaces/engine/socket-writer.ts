// The stdin of an exec (the engine's hijacked socket, keeld's connection): writes with backpressure.
import { EngineError } from './engine';

/**
 * Writes to an exec's socket, waiting for 'drain' when the other side is behind (uploads stay bounded
 * in memory): past the stream's high-water mark, or past `queueBytes` queued when given.
 */
export function socketWriter(stream: NodeJS.WritableStream & { destroyed?: boolean; writableLength?: number }, queueBytes?: number) {
  return {
    write(bytes: Uint8Array): Promise<void> {
      if (stream.destroyed) return Promise.reject(new EngineError('the process closed its input', 'failed'));
      const below = stream.write(bytes);
      if (queueBytes === undefined ? below : (stream.writableLength ?? 0) <= queueBytes) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        const done = (e?: Error) => {
          stream.off('drain', ok);
          stream.off('close', closed);
          e ? reject(e) : resolve();
        };
        const ok = () => done();
        const closed = () => done(new EngineError('the process closed its input', 'failed'));
        stream.on('drain', ok);
        stream.on('close', closed);
      });
    },
    // Half-close: the process reads EOF while its output still arrives.
    end: () => stream.end(),
  };
}
