import type { Script } from '../types.js';
import { analyzeSource } from './analyze.js';
import type { SourceUsage } from './analyze.js';
import type { StaticPlan } from './static-plan.js';
import { ConstantRuns } from './static-plan-run.js';
import { wrapSource } from './wrap-source.js';

/** The runtime's Script: the source, its wrapped form and an id that names it inside each isolate. */
export class CompiledScript implements Script {
  readonly wrapped: string;
  readonly prefixLength: number;
  /** The variables and properties of `this` the source names: only those cross per run. */
  readonly usage: SourceUsage;
  /** Its resource (the filename's folder): script runs are scheduled fairly between resources. */
  readonly group: string;
  /** Set by compile() when the source is in the static subset: its runs need no script process. */
  plan: StaticPlan | undefined = undefined;
  private constantRuns: ConstantRuns | undefined;

  constructor(
    readonly id: number,
    readonly filename: string,
    readonly source: string,
    /** The runtime that compiled it; scripts are not shared between runtimes. */
    readonly owner: object,
  ) {
    this.usage = analyzeSource(source);
    ({ code: this.wrapped, prefixLength: this.prefixLength } = wrapSource(source, this.usage));
    const slash = filename.lastIndexOf('/');
    this.group = slash > 0 ? filename.slice(0, slash) : filename;
  }

  get planned(): boolean {
    return this.plan !== undefined;
  }

  get constant(): boolean {
    // A plan that always cancels gives no object to answer with: its runs take the request's path.
    return this.plan?.constant === true && !this.plan.cancels;
  }

  /** The runs of a constant plan, kept with the script (the plan evaluated once); undefined without one. */
  runsOfConstant(): ConstantRuns | undefined {
    if (this.plan?.constant !== true) return undefined;
    return (this.constantRuns ??= new ConstantRuns(this.plan, this.usage.thisProps));
  }

  get names(): ReadonlySet<string> | undefined {
    return this.usage.names;
  }

  get reads(): readonly string[] | undefined {
    return this.usage.thisProps;
  }
}
