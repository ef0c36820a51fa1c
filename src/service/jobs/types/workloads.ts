/**
 * Workload job types (md, option, var) wrap src/workloads' WORKLOAD_JOB_TYPES: their own validators
 * check the parameters (TANDEM_ERR_INVALID_ARGUMENT naming the field) and their runners return JSON.
 * The module is imported when the service starts, so a build without it still serves the other types.
 */
import { TandemError } from '../../../core/errors.js';
import { HARDWARE_KINDS } from '../../../devices/device.js';
import type { Runtime } from '../../../runtime/runtime.js';
import type { WorkloadJobType } from '../../../workloads/index.js';
import { defineJobType, type AnyJobType, type JobContext } from '../job-type.js';
import { requireRuntime } from './task-helpers.js';

type Params = Readonly<Record<string, unknown>>;

/** Job classes for the operator's hardware rules: Monte Carlo risk is latency-bound, MD is throughput. */
const JOB_CLASS: Record<WorkloadJobType['name'], string> = {
  md: 'throughput',
  option: 'latency',
  var: 'latency',
};
/** Longer budgets than sleep/gemm: an MD run or a large Monte Carlo price legitimately takes minutes. */
const DEFAULT_TIMEOUT_SECONDS: Record<WorkloadJobType['name'], number> = {
  md: 3600,
  option: 600,
  var: 600,
};
const KINDS = new Set<string>(HARDWARE_KINDS);

/**
 * The job's progress from the workload's: MD reports each completed step, the Monte Carlo types each
 * completed task (RunOptions.onProgress); the message is what the dashboard and the CLI show.
 */
function progressOf(ctx: JobContext<Params>) {
  return (done: number, total: number, unit: 'step' | 'task'): void =>
    ctx.progress(total > 0 ? done / total : 0, `${unit} ${done}/${total}`);
}

function wrap(w: WorkloadJobType): AnyJobType {
  return defineJobType<Params>({
    name: w.name,
    description: w.summary,
    // Made from the same field descriptions as the workload's validator, which still runs in parse
    // (cross-field rules: the cutoff against the box, portfolio names, a symmetric correlation).
    paramsSchema: w.paramsSchema,
    parse(raw) {
      w.validate(raw);
      return raw;
    },
    // From the workload's validated config (md: cells as a number or [nx, ny, nz], atoms, presets).
    memoryBytes: (p) => w.memoryBytes(p),
    jobClass: () => JOB_CLASS[w.name],
    defaultTimeoutSeconds: DEFAULT_TIMEOUT_SECONDS[w.name],
    requestedDevice: (p) =>
      typeof p['device'] === 'string' && p['device'] !== 'auto' ? p['device'] : undefined,
    async run(ctx: JobContext<Params>) {
      // The workloads run on the full Runtime (the service always holds one when a device is open).
      const rt = requireRuntime(ctx) as unknown as Runtime;
      // 'auto' (the schema's default, filled in at submit) leaves the choice to the hardware rules.
      const asked = ctx.params['device'] === 'auto' ? undefined : ctx.params['device'];
      const device =
        asked ?? (ctx.placement.device && KINDS.has(ctx.placement.device) ? ctx.placement.device : undefined);
      const params = device === undefined ? ctx.params : { ...ctx.params, device };
      // The signal is the cancellation point: the workload stops at its next task or step boundary. The
      // tags put the job's id on every task (its trace's task spans, the device it ran on).
      const result = await w.run(rt, params, undefined, {
        signal: ctx.signal,
        tags: ctx.tags,
        onProgress: progressOf(ctx),
      });
      // A stop that came after its last boundary: the result is dropped, as the job was stopped.
      if (ctx.signal.aborted) throw new TandemError('TANDEM_ERR_CANCELLED', 'cancelled while running');
      return result;
    },
  });
}

/**
 * The workload types, or none when their module cannot be loaded (a partial build, or a broken
 * workload): the service still serves its other job types, and says why these are missing.
 */
export async function loadWorkloadJobTypes(warn: (msg: string) => void): Promise<AnyJobType[]> {
  try {
    const mod = await import('../../../workloads/index.js');
    return Object.values(mod.WORKLOAD_JOB_TYPES).map(wrap);
  } catch (e) {
    warn(`job types md, option, var are unavailable: ${e instanceof Error ? e.message : String(e)}`);
    return [];
  }
}
