import { open } from 'node:fs/promises';

/** What {@link repairTornTail} did. */
export type TailRepair = { kind: 'none' } | { kind: 'terminated' } | { kind: 'dropped'; bytes: number };

const CHUNK = 64 * 1024;

/**
 * A data file is a sequence of lines, each ended by '\n'; a write cut short (the machine lost
 * power, the disk filled up) leaves a last line without its '\n'. That line was never
 * acknowledged, so it is dropped (the file is cut after the last '\n'); a last line that is
 * complete JSON and only misses its '\n' is kept. Corruption anywhere else is not touched here:
 * the loader refuses to start on it.
 */
export async function repairTornTail(filename: string): Promise<TailRepair> {
  let handle;
  try {
    handle = await open(filename, 'r+');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { kind: 'none' };
    throw err;
  }
  try {
    const { size } = await handle.stat();
    if (size === 0) return { kind: 'none' };
    const last = Buffer.alloc(1);
    await handle.read(last, 0, 1, size - 1);
    if (last[0] === 0x0a) return { kind: 'none' };
    // Find the last '\n', reading backwards.
    const chunks: Buffer[] = [];
    let end = size;
    let cut = 0;
    while (end > 0) {
      const start = Math.max(0, end - CHUNK);
      const buf = Buffer.alloc(end - start);
      await handle.read(buf, 0, buf.length, start);
      const at = buf.lastIndexOf(0x0a);
      if (at >= 0) {
        cut = start + at + 1;
        chunks.unshift(buf.subarray(at + 1));
        break;
      }
      chunks.unshift(buf);
      end = start;
    }
    const tail = Buffer.concat(chunks).toString('utf8');
    // A line that is complete but cannot be ended (no room for one byte on a full disk) is
    // dropped too: it was never acknowledged (an append is answered once its '\n' is written),
    // and the next append must not be glued to it.
    try {
      JSON.parse(tail);
      await handle.write('\n', size);
      return { kind: 'terminated' };
    } catch {
      await handle.truncate(cut);
      return { kind: 'dropped', bytes: size - cut };
    }
  } finally {
    await handle.close();
  }
}
