// What a template build is given, checked before anything reaches the engine: the Dockerfile (no
// step that reaches past the build's sandbox) and its context (paths inside it, bounded), packed as
// the tar the engine builds from. `FROM keel/minimal` and `FROM keel/bun-typescript` name the
// built-in templates' images, whatever tags this Keel gives them.
import { pack } from 'tar-stream';
import { parseIpLiteral } from '../../../platform/net/address-policy';
import { WorkspaceErrors } from '../workspaces.errors';

/** Built-in base names a Dockerfile may use, and the built-in template each is. */
export const BUILTIN_BASES: Record<string, 'minimal' | 'bun-typescript'> = { 'keel/minimal': 'minimal', 'keel/bun-typescript': 'bun-typescript' };

/** Instructions and flags that would reach the host, the network or another build's secrets. */
const REFUSED: [RegExp, string][] = [
  [/--mount\b/i, 'RUN --mount (bind, cache, secret or ssh mounts reach past the build)'],
  [/--network\b/i, 'RUN --network (a build step has no network)'],
  [/--security\b/i, 'RUN --security (no privileged step)'],
  [/--privileged\b/i, '--privileged (no privileged step)'],
  [/^ADD\s+(--\S+\s+)*(https?|git|ssh):/i, 'ADD from a URL (the engine would fetch it from the Keel host)'],
];

/** The Dockerfile's logical lines (continuations joined), numbered by their first physical line. */
function logicalLines(dockerfile: string): { line: number; text: string }[] {
  const out: { line: number; text: string }[] = [];
  let current: { line: number; text: string } | undefined;
  dockerfile.split(/\r?\n/).forEach((raw, i) => {
    const text = raw.trim();
    if (!current && (text === '' || text.startsWith('#'))) return;
    current ??= { line: i + 1, text: '' };
    if (text.endsWith('\\')) current.text += text.slice(0, -1) + ' ';
    else {
      current.text += text;
      out.push(current);
      current = undefined;
    }
  });
  if (current) out.push(current);
  return out;
}

/** Images Keel makes for its actors (template versions, snapshots): on the engine, but one actor's, not everyone's. */
const KEEL_IMAGE = /^keel-(template|snapshot)([:@]|$)/i;

/**
 * The images of Keel's own a Dockerfile names (`FROM`, `COPY --from=`, `RUN --mount=from=` is refused
 * anyway), with their lines: a build could otherwise copy another actor's template or snapshot.
 */
export function keelImages(dockerfile: string): { line: number; image: string }[] {
  return imageRefs(dockerfile).filter((r) => KEEL_IMAGE.test(r.image));
}

/**
 * The registry host an image name pulls from, when it names one (`10.0.0.5:5000/x`, `localhost/x`,
 * `[::1]:5000/x`); Docker Hub's names have none.
 */
function registryHost(image: string): string | undefined {
  const slash = image.indexOf('/');
  if (slash < 0) return undefined;
  const first = image.slice(0, slash);
  if (!/[.:]/.test(first) && first !== 'localhost') return undefined;
  const v6 = /^\[([^\]]+)\]/.exec(first);
  return v6 ? v6[1] : first.replace(/:\d+$/, '');
}

/** Every image a Dockerfile names (`FROM`, `COPY --from=`), as the engine reads the name, with its line. */
function imageRefs(dockerfile: string): { line: number; image: string }[] {
  const out: { line: number; image: string }[] = [];
  // ARG defaults are the only values a variable in FROM can take (Keel passes no build args).
  const args = new Map<string, string>();
  const expand = (s: string) => s.replace(/\$\{(\w+)\}|\$(\w+)/g, (m, a?: string, b?: string) => args.get((a ?? b)!) ?? m);
  for (const l of logicalLines(dockerfile)) {
    const arg = /^ARG\s+(\w+)(?:=(\S*))?\s*$/i.exec(l.text);
    if (arg) {
      if (arg[2] === undefined) args.delete(arg[1]!);
      else args.set(arg[1]!, arg[2].replace(/^"(.*)"$/, '$1'));
    }
    const from = /^FROM\s+(?:--\S+\s+)*(\S+)/i.exec(l.text)?.[1];
    const copied = /^(?:COPY|ADD)\s/i.test(l.text) ? /\s--from=(\S+)/i.exec(l.text)?.[1] : undefined;
    for (const named of [from, copied]) {
      if (!named) continue;
      // As the engine reads a name: Docker Hub's spellings of a local name are that name.
      const image = expand(named).replace(/^(?:(?:index|registry-1)\.)?docker\.io\//i, '').replace(/^library\//i, '');
      if (image.includes('$')) throw WorkspaceErrors.INVALID_REQUEST(`the Dockerfile's line ${l.line} is refused: an image named by a variable without an ARG default Keel can read`, { property: '/dockerfile', line: l.line });
      out.push({ line: l.line, image });
    }
  }
  return out;
}

/** The Dockerfile with its built-in bases named by this Keel's image tags; a refused step is 400 naming its line. */
export function checkDockerfile(dockerfile: string, baseImage: (builtin: 'minimal' | 'bun-typescript') => string): { text: string; bases: ('minimal' | 'bun-typescript')[] } {
  const lines = logicalLines(dockerfile);
  if (!lines.some((l) => /^FROM\s/i.test(l.text))) throw WorkspaceErrors.INVALID_REQUEST('the Dockerfile has no FROM line', { property: '/dockerfile' });
  for (const l of lines) {
    for (const [re, why] of REFUSED) {
      if (re.test(l.text)) throw WorkspaceErrors.INVALID_REQUEST(`the Dockerfile's line ${l.line} is refused: ${why}`, { property: '/dockerfile', line: l.line });
    }
  }
  // The engine pulls from a named registry on the host's network: one at an address literal or on the
  // host itself would have the engine make requests Keel's network rules forbid (metadata, the host).
  for (const { line, image } of imageRefs(dockerfile)) {
    const host = registryHost(image);
    if (host && (parseIpLiteral(host) || /^localhost$|\.localhost$|\.local$/i.test(host))) {
      throw WorkspaceErrors.INVALID_REQUEST(`the Dockerfile's line ${line} is refused: images are pulled from registries by name, not from an address or this host`, { property: '/dockerfile', line });
    }
  }
  const bases = new Set<'minimal' | 'bun-typescript'>();
  const text = dockerfile.replace(/^(\s*FROM\s+(?:--platform=\S+\s+)?)(keel\/(?:minimal|bun-typescript))(?::[\w.-]+)?(?=\s|$)/gim, (_m, head: string, name: string) => {
    const builtin = BUILTIN_BASES[name.toLowerCase()]!;
    bases.add(builtin);
    return head + baseImage(builtin);
  });
  return { text, bases: [...bases] };
}

/** Keel's part of a build context: `.keel-root/workspace/`, the workspace volume's mount point as the workspace's user owns it. */
const KEEL_ROOT = '.keel-root';

/**
 * The user a workspace made from this Dockerfile runs as, when the Dockerfile says it: the last `USER`
 * of its last stage, numeric (`1500` is `1500:1500`) or by name (`dev`, `dev:staff`, as written).
 * Undefined when the last stage sets none (the base image's holds) or one Keel does not read.
 */
export function lastUser(dockerfile: string): string | undefined {
  const lines = logicalLines(dockerfile);
  const from = lines.findLastIndex((l) => /^FROM\s/i.test(l.text));
  const user = lines.slice(from + 1).findLast((l) => /^USER\s/i.test(l.text));
  const spec = user && /^USER\s+(\S+)\s*$/i.exec(user.text)?.[1];
  if (!spec) return undefined;
  const numeric = /^(\d+)(?::(\d+))?$/.exec(spec);
  if (numeric) return `${numeric[1]}:${numeric[2] ?? numeric[1]}`;
  return /^[A-Za-z_][\w.-]*(:[A-Za-z_\d][\w.-]*)?$/.test(spec) ? spec : undefined;
}

/**
 * `uid:gid` of a USER spec (`dev`, `dev:staff`, `1500`, `1500:staff`) from an image's /etc/passwd and
 * /etc/group; a user's primary group when none is named. Undefined when a name is not there.
 */
export function numericUser(spec: string, passwd: string | null, group: string | null): string | undefined {
  const [user, grp] = spec.split(':') as [string, string | undefined];
  const entry = (file: string | null, name: string) => file?.split('\n').map((l) => l.split(':')).find((f) => f[0] === name);
  const pw = /^\d+$/.test(user) ? undefined : entry(passwd, user);
  const uid = /^\d+$/.test(user) ? user : pw?.[2];
  if (!uid || !/^\d+$/.test(uid)) return undefined;
  const gid = grp === undefined ? (pw?.[3] ?? uid) : /^\d+$/.test(grp) ? grp : entry(group, grp)?.[2];
  return gid && /^\d+$/.test(gid) ? `${uid}:${gid}` : undefined;
}

/** Whether the last stage starts from a built-in image (whose /workspace is 1000:1000's). */
export function fromBuiltin(dockerfile: string): boolean {
  const last = logicalLines(dockerfile).findLast((l) => /^FROM\s/i.test(l.text));
  return !!last && /^FROM\s+(--platform=\S+\s+)?keel\/(minimal|bun-typescript)(:[\w.-]+)?(\s|$)/i.test(last.text);
}

/**
 * The Dockerfile with a last step that makes `/workspace` (the volume's mount point, whose owner a
 * new volume takes) `owner`'s: without it a workspace user other than the image's owner of
 * /workspace could not write its own volume (workspaces run with no capabilities). A COPY, so the
 * image needs no shell.
 */
export function ownWorkspace(dockerfile: string, owner: string): string {
  return `${dockerfile.replace(/\s*$/, '')}\nCOPY --chown=${owner} ${KEEL_ROOT}/ /\n`;
}

/** A context path: relative, inside the context, no empty or dot segments. */
function checkPath(path: string): string {
  const segments = path.split('/');
  if (segments[0] === KEEL_ROOT) throw WorkspaceErrors.INVALID_REQUEST(`a files path may not start with ${KEEL_ROOT}/ (Keel's part of the context)`, { property: '/files' });
  if (path.startsWith('/') || path.length > 1024 || segments.some((s) => s === '..' || s === '' || s === '.') || path.includes('\0')) {
    throw WorkspaceErrors.INVALID_REQUEST('a files path must be relative and stay inside the build context (no leading /, no .. or empty segments)', { property: '/files' });
  }
  return path;
}

/** The files' bytes (`base64:` prefixed values decoded), checked against the context bound. */
export function contextFiles(files: Record<string, string>, maxBytes: number): [string, Buffer][] {
  let total = 0;
  return Object.entries(files).map(([path, value]) => {
    const bytes = value.startsWith('base64:') ? Buffer.from(value.slice(7), 'base64') : Buffer.from(value, 'utf8');
    total += bytes.byteLength;
    if (total > maxBytes) throw WorkspaceErrors.INVALID_REQUEST(`the build context is larger than APP_TEMPLATE_CONTEXT_BYTES (${maxBytes} bytes)`, { property: '/files', limit: maxBytes });
    return [checkPath(path), bytes];
  });
}

/** The tar the engine builds from: the Dockerfile at its root and the files. */
export async function contextTar(dockerfile: string, files: [string, Buffer][]): Promise<Buffer> {
  const p = pack();
  const chunks: Buffer[] = [];
  p.on('data', (c: Buffer) => chunks.push(c));
  const done = new Promise<void>((resolve, reject) => {
    p.on('end', resolve);
    p.on('error', reject);
  });
  const add = (name: string, body: Buffer) => new Promise<void>((resolve, reject) => p.entry({ name, mode: 0o644, mtime: new Date(0) }, body, (e) => (e ? reject(e) : resolve())));
  for (const [path, bytes] of files) if (path !== 'Dockerfile') await add(path, bytes);
  await new Promise<void>((resolve, reject) => p.entry({ name: `${KEEL_ROOT}/workspace/`, type: 'directory', mode: 0o755, mtime: new Date(0) }, (e) => (e ? reject(e) : resolve())));
  await add('Dockerfile', Buffer.from(dockerfile, 'utf8'));
  p.finalize();
  await done;
  return Buffer.concat(chunks);
}
