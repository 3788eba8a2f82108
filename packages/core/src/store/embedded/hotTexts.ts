/**
 * The stored texts of objects read by id lately, per collection (GET by id answers them without
 * asking SQLite), at most MAX_BYTES of text: past it the oldest entries go first.
 *
 * Invalidation, stated: an entry is only ever the text of a committed row. It is made by a read
 * (reads run when no write is queued, so what they see is committed); a write that may change or
 * remove a row drops its entry, or the whole collection's, when the write runs in its group commit,
 * before it is committed (a write that then fails leaves no entry either: the next read reads the
 * database again). So an update drops its object's entry, a remove (any filter) and a rename of
 * the collection drop them all; an insert makes a new id, which has no entry.
 */
export class HotTexts {
  static readonly MAX_BYTES = 4 * 1024 * 1024;
  readonly #texts = new Map<string, string>();
  #bytes = 0;

  get(id: string): string | undefined {
    return this.#texts.get(id);
  }

  set(id: string, text: string): void {
    if (text.length > HotTexts.MAX_BYTES / 64) return;
    this.delete(id);
    this.#texts.set(id, text);
    this.#bytes += text.length + id.length;
    while (this.#bytes > HotTexts.MAX_BYTES) {
      const oldest = this.#texts.keys().next().value as string;
      this.delete(oldest);
    }
  }

  delete(id: string): void {
    const text = this.#texts.get(id);
    if (text === undefined) return;
    this.#texts.delete(id);
    this.#bytes -= text.length + id.length;
  }

  clear(): void {
    this.#texts.clear();
    this.#bytes = 0;
  }
}
