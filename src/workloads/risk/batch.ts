/**
 * Many European prices in one fused launch (mc_european_batch): the interactive lane's option pricer
 * and any caller with a list of options. Each option keeps the streams, rows and f32 partial sums a
 * one-task mc_european price of it has, so its price is the same whichever batch it lands in.
 */
import { TandemError } from '../../core/errors.js';
import type { Runtime } from '../../runtime/runtime.js';
import type { TaskHandle } from '../../runtime/task.js';
import type { Tensor } from '../../memory/tensor.js';
import {
  addPartialRows,
  estimate,
  mcSpec,
  paths,
  type McPartial,
  type McSpec,
  type McTerms,
} from '../../kernels/mc_common/engine.js';
import { optionRows, TERM_COLUMNS, writeTerms } from '../../kernels/mc_european_batch/layout.js';
import { settleAll } from '../tasks.js';

/** What one batched option needs: the engine's terms less the Asian-only fields. */
export type EuropeanBatchTerms = Omit<McTerms, 'kind' | 'steps'>;

export interface BatchPrice {
  price: number;
  stdError: number;
  paths: number;
}

export interface BatchOptions {
  /** rt.submit's device (a kind or an id); undefined lets the scheduler choose. */
  readonly device?: string | undefined;
  readonly tags?: Readonly<Record<string, string>>;
  /**
   * Tasks the options are split into (contiguous groups): 1 on a GPU (the whole batch is one launch),
   * the CPU workers' count on the CPU so every core prices part of it. Default 1.
   */
  readonly tasks?: number;
}

type BatchRuntime = Pick<Runtime, 'tensor' | 'submit' | 'read' | 'free'>;

export function europeanSpec(t: EuropeanBatchTerms): McSpec {
  return mcSpec({ ...t, kind: 'european', steps: 1 });
}

interface Group {
  readonly from: number;
  readonly to: number;
  readonly terms: Float64Array;
  readonly rows: number;
}

function group(specs: readonly McSpec[], from: number, to: number): Group {
  const terms = new Float64Array((to - from) * TERM_COLUMNS);
  let rows = 0;
  for (let i = from; i < to; i++) rows = writeTerms(terms, i - from, specs[i]!, rows);
  return { from, to, terms, rows };
}

/**
 * A price over fewer samples than asked is a wrong answer that looks right: the rows' counts must add
 * up to the spec's samples (to f32 rounding of the per-row sums).
 */
function checkCounted(spec: McSpec, counted: number, i: number): void {
  if (Math.abs(counted - spec.samples) <= spec.samples * 1e-6) return;
  throw new TandemError(
    'TANDEM_ERR_INTERNAL',
    `mc_european_batch: option ${i} counted ${counted} samples, expected ${spec.samples} (${paths(spec)} paths)`,
  );
}

/** Prices every option of `specs` (from europeanSpec/mcSpec); results in order. */
export async function priceEuropeanBatch(
  rt: BatchRuntime,
  specs: readonly McSpec[],
  opts: BatchOptions = {},
): Promise<BatchPrice[]> {
  const n = specs.length;
  const parts = Math.max(1, Math.min(n, opts.tasks ?? 1));
  const per = Math.ceil(n / parts);
  const groups: Group[] = [];
  for (let from = 0; from < n; from += per) groups.push(group(specs, from, Math.min(n, from + per)));
  const tensors: Tensor[] = [];
  const handles: TaskHandle[] = [];
  try {
    const reads = groups.map((g) => {
      const terms = rt.tensor([g.to - g.from, TERM_COLUMNS], 'f64', g.terms);
      const out = rt.tensor([g.rows, 3], 'f32');
      tensors.push(terms, out);
      handles.push(
        rt.submit({
          kernel: 'mc_european_batch',
          args: { terms, out },
          scalars: {},
          name: `mc_european_batch[${g.from}+${g.to - g.from}]`,
          ...(opts.device !== undefined ? { device: opts.device } : {}),
          ...(opts.tags ? { tags: opts.tags } : {}),
        }),
      );
      return rt.read(out);
    });
    let rows;
    try {
      rows = await Promise.all(reads);
    } catch (e) {
      await settleAll(handles);
      throw e;
    }
    const prices: BatchPrice[] = new Array<BatchPrice>(n);
    for (let g = 0; g < groups.length; g++) {
      const { from, to, terms, rows: total } = groups[g]!;
      const data = rows[g]!;
      for (let i = from; i < to; i++) {
        const [r0, r1] = optionRows(terms, to - from, total, i - from);
        const sum: McPartial = { sum: 0, sumSq: 0, count: 0 };
        addPartialRows(sum, data.subarray(3 * r0, 3 * r1));
        const spec = specs[i]!;
        checkCounted(spec, sum.count, i);
        const { price, stdError } = estimate(spec, sum);
        // The paths the kernel counted (f32 row sums: exact to ~1e-7), not the ones asked for.
        prices[i] = { price, stdError, paths: Math.round(sum.count) * (spec.antithetic ? 2 : 1) };
      }
    }
    return prices;
  } finally {
    for (const t of tensors) rt.free(t);
  }
}
