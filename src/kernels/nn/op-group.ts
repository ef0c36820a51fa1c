/**
 * A group of deep-learning ops (issue 15) as one value: definitions, implementations per backend,
 * float64 references and conformance cases. Each group lives in its own file (nn/<group>.ts) so the
 * flat tables (register.ts, references.ts, conformance-cases.ts) take all of them through `NN_GROUPS`.
 */
import type { ConformanceCase } from '../case-types.js';
import type { ReferenceFn } from '../common/reference.js';
import type { KernelDef, KernelImplEntry } from '../kernel.js';

export interface OpGroup {
  readonly name: string;
  readonly defs: readonly KernelDef[];
  readonly impls: readonly KernelImplEntry[];
  readonly references: Readonly<Record<string, ReferenceFn>>;
  cases(): ConformanceCase[];
}
