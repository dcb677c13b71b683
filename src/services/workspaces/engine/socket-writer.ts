// The stdin of an engine exec: writes to its hijacked socket with backpressure.
import { EngineError } from './engine';

/** Writes to an exec's hijacked socket, waiting for 'drain' when the engine is behind (uploads stay bounded in memory). */
export function socketWriter(stream: NodeJS.WritableStream & { destroyed?: boolean }) {
  return {
    write(bytes: Uint8Array): Promise<void> {
      if (stream.destroyed) return Promise.reject(new EngineError('the process closed its input', 'failed'));
      if (stream.write(bytes)) return Promise.resolve();
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
