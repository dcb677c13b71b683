// The part of tar-stream 2.x (no types of its own) that images/tar.ts uses: the packer.
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
}
