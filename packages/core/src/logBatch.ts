import type { AccessEntry } from './logger.js';

/** Bytes a batch holds before it asks to be written. */
export const BATCH_BYTES = 64 * 1024;

/**
 * Characters that would split a text line or hide in a terminal (a path or message of a client):
 * C0 and C1 controls (C1 holds NEL, a line end to Unicode, and CSI, a terminal's escape), U+2028,
 * U+2029.
 */
// eslint-disable-next-line no-control-regex -- control characters are what it finds
export const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g;

export function escapeControl(c: string): string {
  return `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
}

/** CONTROL without its `g` flag: a test of it keeps no position between texts. */
const HAS_CONTROL = new RegExp(CONTROL.source);

/**
 * Whether the text has a character CONTROL finds: a test, not CONTROL's replace (a new text each
 * time), nor a loop of `charCodeAt` (a request's texts come in many string representations, and
 * such a loop took a generic property lookup per character).
 */
export function hasControl(text: string): boolean {
  return HAS_CONTROL.test(text);
}

/**
 * `${ms}` for a duration in tenths of a millisecond (what the access entry holds), written from
 * whole numbers: a fraction's shortest-digits conversion cost ~100 ns a line. Any other value as
 * `${ms}` writes it.
 */
export function msText(ms: number): string {
  const tenths = Math.round(ms * 10);
  if (tenths / 10 !== ms || tenths < 0 || tenths > 0x3fffffff) return `${ms}`;
  const whole = (tenths - (tenths % 10)) / 10;
  return tenths % 10 === 0 ? `${whole}` : `${whole}.${tenths % 10}`;
}

/** The text access line of an entry. */
export function accessText(entry: AccessEntry): string {
  // The replace only for a path that needs it: a regex pass cost more than the rest of the line.
  const path = hasControl(entry.path) ? entry.path.replace(CONTROL, escapeControl) : entry.path;
  return `${entry.time} info ${entry.method} ${path} ${entry.status} ${msText(entry.ms)}ms ${entry.bytes}B id=${entry.id} client=${entry.client}${entry.uid === undefined ? '' : ` uid=${entry.uid}`}${entry.plan === undefined ? '' : ` plan=${entry.plan}`}${entry.aborted ? ' aborted' : ''}\n`;
}

/**
 * Log lines waiting to be written together, as UTF-8 bytes in one buffer, each line encoded as it
 * comes. Kept as one text instead, the batch was a chain of ~12,000 strings (a dozen pieces per
 * access line) that outlived the young generation and was flattened when written: flattening
 * that chain alone cost a measurable part of a request (bench/RESULTS.md, "Figures from code comments").
 */
export class LogBatch {
  private bytes = Buffer.allocUnsafeSlow(BATCH_BYTES);
  private at = 0;
  private count = 0;

  /** Lines held. */
  get lines(): number {
    return this.count;
  }

  /** True once the batch holds as much as it should before being written. */
  get full(): boolean {
    return this.at >= BATCH_BYTES;
  }

  /** Adds a line (its newline included). */
  addText(line: string): void {
    this.room(line.length * 3);
    this.at += this.bytes.write(line, this.at, 'utf8');
    this.count++;
  }

  /** The lines held, as text, and an empty batch. */
  take(): string {
    const text = this.bytes.toString('utf8', 0, this.at);
    this.at = 0;
    this.count = 0;
    // A buffer grown for a long line is not kept.
    if (this.bytes.length > BATCH_BYTES) this.bytes = Buffer.allocUnsafeSlow(BATCH_BYTES);
    return text;
  }

  /** Makes room for `n` more bytes: a larger buffer, the held bytes copied. */
  private room(n: number): void {
    if (this.at + n <= this.bytes.length) return;
    const next = Buffer.allocUnsafeSlow(Math.max(this.bytes.length * 2, this.at + n));
    this.bytes.copy(next, 0, 0, this.at);
    this.bytes = next;
  }
}
