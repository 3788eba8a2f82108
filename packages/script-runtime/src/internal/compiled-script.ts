import type { Script } from '../types.js';
import { analyzeSource } from './analyze.js';
import type { SourceUsage } from './analyze.js';
import { wrapSource } from './wrap-source.js';

/** The runtime's Script: the source, its wrapped form and an id that names it inside each isolate. */
export class CompiledScript implements Script {
  readonly wrapped: string;
  readonly prefixLength: number;
  /** The variables and properties of `this` the source names: only those cross per run. */
  readonly usage: SourceUsage;

  constructor(
    readonly id: number,
    readonly filename: string,
    readonly source: string,
    /** The runtime that compiled it; scripts are not shared between runtimes. */
    readonly owner: object,
  ) {
    ({ code: this.wrapped, prefixLength: this.prefixLength } = wrapSource(source));
    this.usage = analyzeSource(source);
  }

  get names(): ReadonlySet<string> | undefined {
    return this.usage.names;
  }
}
