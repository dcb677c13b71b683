// A tiny ustar writer for archives Keel builds itself (the minimal image's root filesystem),
// so ownership and modes are exact without root privileges or the host's tar.

export type TarEntry =
  | { type: 'file'; path: string; mode: number; uid?: number; gid?: number; data: Uint8Array }
  | { type: 'dir'; path: string; mode: number; uid?: number; gid?: number }
  | { type: 'symlink'; path: string; target: string; uid?: number; gid?: number };

const enc = new TextEncoder();

function field(buf: Uint8Array, offset: number, len: number, value: string) {
  const b = enc.encode(value);
  if (b.length > len) throw new Error(`tar field too long: ${value}`);
  buf.set(b, offset);
}
const octal = (n: number, len: number) => n.toString(8).padStart(len - 1, '0');

function header(e: TarEntry, size: number): Uint8Array {
  const h = new Uint8Array(512);
  let name = e.path;
  let prefix = '';
  if (enc.encode(name).length > 100) {
    const cut = name.lastIndexOf('/', 155);
    if (cut <= 0 || enc.encode(name.slice(cut + 1)).length > 100) throw new Error(`tar path too long: ${name}`);
    prefix = name.slice(0, cut);
    name = name.slice(cut + 1);
  }
  const mode = e.type === 'symlink' ? 0o777 : e.mode;
  field(h, 0, 100, name);
  field(h, 100, 8, octal(mode, 8));
  field(h, 108, 8, octal(e.uid ?? 0, 8));
  field(h, 116, 8, octal(e.gid ?? 0, 8));
  field(h, 124, 12, octal(size, 12));
  field(h, 136, 12, octal(0, 12));
  h.fill(0x20, 148, 156); // checksum computed with spaces in place
  field(h, 156, 1, e.type === 'file' ? '0' : e.type === 'dir' ? '5' : '2');
  if (e.type === 'symlink') field(h, 157, 100, e.target);
  field(h, 257, 6, 'ustar');
  field(h, 263, 2, '00');
  field(h, 345, 155, prefix);
  let sum = 0;
  for (const b of h) sum += b;
  field(h, 148, 8, octal(sum, 7) + '\0');
  return h;
}

export function tarArchive(entries: TarEntry[]): Buffer {
  const parts: Uint8Array[] = [];
  for (const e of entries) {
    const data = e.type === 'file' ? e.data : new Uint8Array(0);
    parts.push(header(e, data.length));
    if (data.length) {
      parts.push(data);
      const pad = (512 - (data.length % 512)) % 512;
      if (pad) parts.push(new Uint8Array(pad));
    }
  }
  parts.push(new Uint8Array(1024));
  return Buffer.concat(parts);
}
