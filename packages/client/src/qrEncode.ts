// A minimal QR code encoder (ISO/IEC 18004): byte mode, error correction M, versions 1-40, the
// mask of lowest penalty. Written for the otpauth:// URIs of two-factor enrolment, so that /svc.js
// carries a few KB instead of a general encoder (images, Kanji, other modes). Follows the
// structure of Project Nayuki's reference encoder (MIT).

// Error correction level M, per version (index 0 unused).
const ECC_PER_BLOCK = [0, 10, 16, 26, 18, 24, 16, 18, 22, 22, 26, 30, 22, 22, 24, 24, 28, 28, 26, 26, 26, 26, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28];
const BLOCKS = [0, 1, 1, 1, 2, 2, 4, 4, 4, 5, 5, 5, 8, 9, 9, 10, 10, 11, 13, 14, 16, 17, 17, 18, 20, 21, 23, 25, 26, 28, 29, 31, 33, 35, 37, 38, 40, 43, 45, 47, 49];
/** Format bits of level M are 00. */
const LEVEL_M_BITS = 0;

/** The dark modules of the QR code of `bytes`: matrix[row][col]. Throws when the bytes do not fit. */
export function encodeQr(bytes: readonly number[]): boolean[][] {
  let version = 1;
  while (dataCodewords(version) < bytes.length + (version <= 9 ? 2 : 3)) {
    if (++version > 40) throw new RangeError(`QR code: ${bytes.length} bytes is more than a QR code holds`);
  }
  const data = withErrorCorrection(dataBits(bytes, version), version);
  const size = version * 4 + 17;
  const matrix = new Grid(size);
  matrix.drawFunctionPatterns(version);
  matrix.drawCodewords(data);
  let best: boolean[][] = [];
  let bestPenalty = Infinity;
  for (let mask = 0; mask < 8; mask++) {
    const candidate = matrix.masked(mask, version);
    const score = penalty(candidate);
    if (score < bestPenalty) [best, bestPenalty] = [candidate, score];
  }
  return best;
}

function rawDataModules(version: number): number {
  let result = (16 * version + 128) * version + 64;
  if (version >= 2) {
    const align = Math.floor(version / 7) + 2;
    result -= (25 * align - 10) * align - 55;
    if (version >= 7) result -= 36;
  }
  return result;
}

const dataCodewords = (version: number): number => Math.floor(rawDataModules(version) / 8) - (ECC_PER_BLOCK[version] as number) * (BLOCKS[version] as number);

/** Mode, length, the bytes, terminator and padding, as codewords. */
function dataBits(bytes: readonly number[], version: number): number[] {
  const bits: number[] = [];
  const put = (value: number, length: number) => {
    for (let i = length - 1; i >= 0; i--) bits.push((value >>> i) & 1);
  };
  put(4, 4);
  put(bytes.length, version <= 9 ? 8 : 16);
  for (const b of bytes) put(b, 8);
  const capacity = dataCodewords(version) * 8;
  put(0, Math.min(4, capacity - bits.length));
  put(0, (8 - (bits.length % 8)) % 8);
  for (let pad = 0xec; bits.length < capacity; pad ^= 0xec ^ 0x11) put(pad, 8);
  const codewords: number[] = [];
  for (let i = 0; i < bits.length; i += 8) codewords.push(bits.slice(i, i + 8).reduce((a, b) => (a << 1) | b, 0));
  return codewords;
}

function gfMultiply(x: number, y: number): number {
  let z = 0;
  for (let i = 7; i >= 0; i--) {
    z = (z << 1) ^ ((z >>> 7) * 0x11d);
    z ^= ((y >>> i) & 1) * x;
  }
  return z;
}

function rsDivisor(degree: number): number[] {
  const result = new Array<number>(degree).fill(0);
  result[degree - 1] = 1;
  let root = 1;
  for (let i = 0; i < degree; i++) {
    for (let j = 0; j < degree; j++) {
      result[j] = gfMultiply(result[j] as number, root);
      if (j + 1 < degree) result[j] = (result[j] as number) ^ (result[j + 1] as number);
    }
    root = gfMultiply(root, 0x02);
  }
  return result;
}

function rsRemainder(data: readonly number[], divisor: readonly number[]): number[] {
  const result = divisor.map(() => 0);
  for (const b of data) {
    const factor = b ^ (result.shift() as number);
    result.push(0);
    divisor.forEach((coefficient, i) => (result[i] = (result[i] as number) ^ gfMultiply(coefficient, factor)));
  }
  return result;
}

/** The data split in blocks, each with its Reed-Solomon codewords, interleaved. */
function withErrorCorrection(data: readonly number[], version: number): number[] {
  const blockCount = BLOCKS[version] as number;
  const eccLength = ECC_PER_BLOCK[version] as number;
  const raw = Math.floor(rawDataModules(version) / 8);
  const shortBlocks = blockCount - (raw % blockCount);
  const shortLength = Math.floor(raw / blockCount);
  const divisor = rsDivisor(eccLength);
  const blocks: number[][] = [];
  for (let i = 0, k = 0; i < blockCount; i++) {
    const part = data.slice(k, k + shortLength - eccLength + (i < shortBlocks ? 0 : 1));
    k += part.length;
    const ecc = rsRemainder(part, divisor);
    if (i < shortBlocks) part.push(0);
    blocks.push(part.concat(ecc));
  }
  const result: number[] = [];
  for (let i = 0; i < (blocks[0] as number[]).length; i++) {
    blocks.forEach((block, j) => {
      if (i !== shortLength - eccLength || j >= shortBlocks) result.push(block[i] as number);
    });
  }
  return result;
}

class Grid {
  readonly dark: boolean[][];
  readonly reserved: boolean[][];
  constructor(readonly size: number) {
    this.dark = Array.from({ length: size }, () => new Array<boolean>(size).fill(false));
    this.reserved = Array.from({ length: size }, () => new Array<boolean>(size).fill(false));
  }

  private set(x: number, y: number, on: boolean): void {
    (this.dark[y] as boolean[])[x] = on;
    (this.reserved[y] as boolean[])[x] = true;
  }

  drawFunctionPatterns(version: number): void {
    const size = this.size;
    for (let i = 0; i < size; i++) {
      this.set(6, i, i % 2 === 0);
      this.set(i, 6, i % 2 === 0);
    }
    for (const [cx, cy] of [[3, 3], [size - 4, 3], [3, size - 4]] as const) {
      for (let dy = -4; dy <= 4; dy++) {
        for (let dx = -4; dx <= 4; dx++) {
          const distance = Math.max(Math.abs(dx), Math.abs(dy));
          if (cx + dx >= 0 && cx + dx < size && cy + dy >= 0 && cy + dy < size) this.set(cx + dx, cy + dy, distance !== 2 && distance !== 4);
        }
      }
    }
    const centers = alignmentCenters(version);
    const last = centers.length - 1;
    centers.forEach((cx, i) =>
      centers.forEach((cy, j) => {
        if ((i === 0 && j === 0) || (i === 0 && j === last) || (i === last && j === 0)) return;
        for (let dy = -2; dy <= 2; dy++) for (let dx = -2; dx <= 2; dx++) this.set(cx + dx, cy + dy, Math.max(Math.abs(dx), Math.abs(dy)) !== 1);
      }),
    );
    this.drawFormat(0);
    if (version >= 7) {
      let rem = version;
      for (let i = 0; i < 12; i++) rem = (rem << 1) ^ ((rem >>> 11) * 0x1f25);
      const bits = (version << 12) | rem;
      for (let i = 0; i < 18; i++) {
        const on = ((bits >>> i) & 1) === 1;
        const a = size - 11 + (i % 3);
        const b = Math.floor(i / 3);
        this.set(a, b, on);
        this.set(b, a, on);
      }
    }
  }

  drawFormat(mask: number): void {
    const data = (LEVEL_M_BITS << 3) | mask;
    let rem = data;
    for (let i = 0; i < 10; i++) rem = (rem << 1) ^ ((rem >>> 9) * 0x537);
    const bits = ((data << 10) | rem) ^ 0x5412;
    const bit = (i: number) => ((bits >>> i) & 1) === 1;
    const size = this.size;
    for (let i = 0; i <= 5; i++) this.set(8, i, bit(i));
    this.set(8, 7, bit(6));
    this.set(8, 8, bit(7));
    this.set(7, 8, bit(8));
    for (let i = 9; i < 15; i++) this.set(14 - i, 8, bit(i));
    for (let i = 0; i < 8; i++) this.set(size - 1 - i, 8, bit(i));
    for (let i = 8; i < 15; i++) this.set(8, size - 15 + i, bit(i));
    this.set(8, size - 8, true);
  }

  drawCodewords(data: readonly number[]): void {
    const size = this.size;
    let i = 0;
    for (let right = size - 1; right >= 1; right -= 2) {
      if (right === 6) right = 5;
      for (let vertical = 0; vertical < size; vertical++) {
        for (let j = 0; j < 2; j++) {
          const x = right - j;
          const y = ((right + 1) & 2) === 0 ? size - 1 - vertical : vertical;
          if (!(this.reserved[y] as boolean[])[x] && i < data.length * 8) {
            (this.dark[y] as boolean[])[x] = (((data[i >>> 3] as number) >>> (7 - (i & 7))) & 1) === 1;
            i++;
          }
        }
      }
    }
  }

  /** A copy with the mask applied to the data modules and its format bits drawn. */
  masked(mask: number, version: number): boolean[][] {
    const copy = new Grid(this.size);
    copy.drawFunctionPatterns(version);
    copy.drawFormat(mask);
    for (let y = 0; y < this.size; y++) {
      for (let x = 0; x < this.size; x++) {
        if ((this.reserved[y] as boolean[])[x]) continue;
        (copy.dark[y] as boolean[])[x] = ((this.dark[y] as boolean[])[x] as boolean) !== MASKS[mask]!(x, y);
      }
    }
    return copy.dark;
  }
}

const MASKS: readonly ((x: number, y: number) => boolean)[] = [
  (x, y) => (x + y) % 2 === 0,
  (_x, y) => y % 2 === 0,
  (x) => x % 3 === 0,
  (x, y) => (x + y) % 3 === 0,
  (x, y) => (Math.floor(x / 3) + Math.floor(y / 2)) % 2 === 0,
  (x, y) => ((x * y) % 2) + ((x * y) % 3) === 0,
  (x, y) => (((x * y) % 2) + ((x * y) % 3)) % 2 === 0,
  (x, y) => (((x + y) % 2) + ((x * y) % 3)) % 2 === 0,
];

function alignmentCenters(version: number): number[] {
  if (version === 1) return [];
  const count = Math.floor(version / 7) + 2;
  const step = version === 32 ? 26 : Math.ceil((version * 4 + 4) / (count * 2 - 2)) * 2;
  const result = [6];
  for (let pos = version * 4 + 10; result.length < count; pos -= step) result.splice(1, 0, pos);
  return result;
}

/** The standard's mask penalty: runs, 2x2 blocks, finder-like patterns, dark/light balance. */
function penalty(dark: boolean[][]): number {
  const size = dark.length;
  const rows = dark.map((row) => row.map((on) => (on ? '1' : '0')).join(''));
  const columns = rows.map((_, x) => rows.map((row) => row[x]).join(''));
  let score = 0;
  for (const line of [...rows, ...columns]) {
    for (const run of line.match(/0{5,}|1{5,}/g) ?? []) score += run.length - 2;
    const padded = `0000${line}0000`;
    for (let at = padded.indexOf('1011101'); at !== -1; at = padded.indexOf('1011101', at + 1)) {
      if (padded.slice(at - 4, at) === '0000' || padded.slice(at + 7, at + 11) === '0000') score += 40;
    }
  }
  for (let y = 0; y < size - 1; y++) {
    for (let x = 0; x < size - 1; x++) {
      const on = rows[y]![x];
      if (rows[y]![x + 1] === on && rows[y + 1]![x] === on && rows[y + 1]![x + 1] === on) score += 3;
    }
  }
  const darkCount = rows.join('').split('1').length - 1;
  const total = size * size;
  score += (Math.ceil(Math.abs(darkCount * 20 - total * 10) / total) - 1) * 10;
  return score;
}
