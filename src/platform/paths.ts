// Path confinement shared by every service that serves files under a configured root.
import { sep } from 'node:path';

/**
 * `path` is `root` itself or somewhere below it. Both must be absolute and normalized the same way
 * (real paths, symlinks followed): this compares strings. A root of `/` contains every absolute path.
 */
export function isInside(root: string, path: string): boolean {
  return path === root || path.startsWith(root.endsWith(sep) ? root : root + sep);
}
