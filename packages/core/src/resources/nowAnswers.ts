/** Characters the kept answers and the stored texts they were made from may take, per collection. */
export const NOW_ANSWERS_CHARS = 4 << 20;

interface NowAnswer {
  readonly stored: string;
  readonly answer: string;
}

/**
 * GET by id answers of an On Get whose outcome depends on the object alone (a constant static
 * plan: CollectionEventRunner.getNow), kept per object with the stored text they were made from:
 * while that text is the object's stored text, the answer is the same, so the run, the copy of
 * the object and the patching of its text are not done again. An object changed since has
 * another text and is answered anew. Bounded in characters, the oldest dropped first.
 *
 * Only the answer is kept: whether this caller may read the object is decided before, on each
 * request (Collection.answerNow).
 */
export class NowAnswers {
  private readonly byId = new Map<string, NowAnswer>();
  private chars = 0;

  constructor(private readonly maxChars = NOW_ANSWERS_CHARS) {}

  /** The answer kept for the object `id` whose stored text is `stored` now, or undefined. */
  get(id: string, stored: string): string | undefined {
    const kept = this.byId.get(id);
    return kept !== undefined && kept.stored === stored ? kept.answer : undefined;
  }

  set(id: string, stored: string, answer: string): void {
    const size = stored.length + answer.length;
    if (size > this.maxChars) return;
    const old = this.byId.get(id);
    if (old !== undefined) {
      this.byId.delete(id);
      this.chars -= old.stored.length + old.answer.length;
    }
    while (this.chars + size > this.maxChars) {
      const [oldestId, oldest] = this.byId.entries().next().value as [string, NowAnswer];
      this.byId.delete(oldestId);
      this.chars -= oldest.stored.length + oldest.answer.length;
    }
    this.byId.set(id, { stored, answer });
    this.chars += size;
  }

  get size(): number {
    return this.byId.size;
  }

  get characters(): number {
    return this.chars;
  }
}
