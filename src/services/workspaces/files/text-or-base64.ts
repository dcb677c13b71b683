// How a tool answers the bytes of a file it read (MCP read_file, the agent's read_file): text when
// they are text, base64 otherwise, saying which. Shared by both tool sets, which reach files/ only
// through its service object.

/**
 * A tool's read as it answers it: the bytes as text when they are UTF-8 without NUL, else base64
 * (saying which). NUL is valid UTF-8 but no text file holds it, and as JSON each costs 6 bytes
 * (`\u0000`): 1 MiB of /dev/zero would be 6 MiB of text. A truncated read decodes as a stream, so a
 * character cut at the bound is left out instead of turning the whole read into base64.
 */
export function textOrBase64(bytes: Uint8Array, truncated: boolean): { encoding: 'utf-8' | 'base64'; content: string } {
  if (!bytes.includes(0)) {
    try {
      return { encoding: 'utf-8', content: new TextDecoder('utf-8', { fatal: true }).decode(bytes, { stream: truncated }) };
    } catch {
      // not UTF-8: base64 below
    }
  }
  return { encoding: 'base64', content: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64') };
}
