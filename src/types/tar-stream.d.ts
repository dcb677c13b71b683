// The part of tar-stream 2.x (no types of its own) that Keel uses: the packer (images/tar.ts) and the
// extractor (engine/docker-images.ts reads small files of an image).
declare module 'tar-stream' {
  import type { Readable, Writable } from 'node:stream';

  export interface Headers {
    name: string;
    size?: number;
    mode?: number;
    mtime?: Date;
    uid?: number;
    gid?: number;
    type?: 'file' | 'directory' | 'symlink';
    linkname?: string;
  }

  export interface Pack extends Readable {
    entry(headers: Headers, buffer?: Buffer | string, callback?: (err?: Error) => void): Writable;
    entry(headers: Headers, callback?: (err?: Error) => void): Writable;
    finalize(): void;
  }

  export function pack(): Pack;

  export interface Extract extends Writable {
    on(event: 'entry', listener: (headers: Headers, stream: Readable, next: () => void) => void): this;
    on(event: 'finish', listener: () => void): this;
    on(event: 'error', listener: (err: Error) => void): this;
  }

  export function extract(): Extract;
}
