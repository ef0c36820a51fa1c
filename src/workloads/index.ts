/**
 * The workload job types as the service and the CLI see them: a validator that turns JSON parameters
 * into a checked config (TandemError TANDEM_ERR_INVALID_ARGUMENT otherwise) and a runner on a Runtime
 * returning a JSON-serialisable result.
 */
import type { Runtime } from '../runtime/runtime.js';
import { MD_PRESETS, MD_SCHEMA, validateMdParams } from './md/params.js';
import { runMd } from './md/run.js';
import {
  EXAMPLE_PORTFOLIO,
  OPTION_SCHEMA,
  VAR_SCHEMA,
  validateOptionParams,
  validateVarParams,
} from './risk/params.js';
import { portfolioVar, priceOption } from './risk/run.js';
import type { RunOptions } from './tasks.js';

export interface WorkloadJobType {
  readonly name: 'md' | 'option' | 'var';
  readonly summary: string;
  /** JSON Schema of the params, made from the same field descriptions as `validate`. */
  readonly paramsSchema: Readonly<Record<string, unknown>>;
  /** Throws a TandemError on bad parameters; call before accepting a job. */
  validate(params: unknown): void;
  /** `opts.signal` stops the run at its next task or step boundary (it drains, then throws). */
  run(
    rt: Runtime,
    params: unknown,
    onProgress?: (p: Record<string, unknown>) => void,
    opts?: RunOptions,
  ): Promise<object>;
}

export const WORKLOAD_JOB_TYPES: Readonly<Record<'md' | 'option' | 'var', WorkloadJobType>> = {
  md: {
    name: 'md',
    summary: 'Lennard-Jones molecular dynamics (presets: ' + Object.keys(MD_PRESETS).join(', ') + ')',
    paramsSchema: MD_SCHEMA,
    validate: (p) => void validateMdParams(p),
    run: (rt, p, onProgress, opts) => runMd(rt, p, { ...opts, onThermo: (row) => onProgress?.({ ...row }) }),
  },
  option: {
    name: 'option',
    summary: 'European or arithmetic-Asian option price by Monte Carlo (Philox4x32-10), with standard error',
    paramsSchema: OPTION_SCHEMA,
    validate: (p) => void validateOptionParams(p),
    run: (rt, p, _progress, opts) => priceOption(rt, p, opts),
  },
  var: {
    name: 'var',
    summary: 'Portfolio value-at-risk and expected shortfall under correlated GBM',
    paramsSchema: VAR_SCHEMA,
    validate: (p) => void validateVarParams(p),
    run: (rt, p, _progress, opts) => portfolioVar(rt, p, opts),
  },
};

export { EXAMPLE_PORTFOLIO, MD_PRESETS };
export * as md from './md/index.js';
export * as risk from './risk/index.js';
export * as tiled from './tiled/index.js';
export * as multiGpu from './multi-gpu/index.js';
