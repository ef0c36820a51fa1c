/**
 * Workload job types (md, option, var) wrap src/workloads' WORKLOAD_JOB_TYPES: their own validators
 * check the parameters (TANDEM_ERR_INVALID_ARGUMENT naming the field) and their runners return JSON.
 * The module is imported when the service starts, so a build without it still serves the other types.
 */
import { TandemError } from '../../../core/errors.js';
import type { Runtime } from '../../../runtime/runtime.js';
import type { SubmitRequest } from '../../../runtime/submit.js';
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
const KINDS = new Set(['cpu', 'cuda', 'webgpu']);

/**
 * The runtime as a workload sees it inside a job: every task it submits carries the job's tags, so the
 * job's trace holds the workload's task spans on each device queue (as gemm's does) and the job records
 * the devices it ran on; `onTaskDone(done, submitted)` follows the tasks' completion. A Proxy rather
 * than a parameter threaded through every workload: the workloads stay plain library calls.
 */
export function runtimeForJob(
  rt: Runtime,
  tags: Readonly<Record<string, string>>,
  onTaskDone?: (done: number, submitted: number) => void,
): Runtime {
  let submitted = 0;
  let done = 0;
  const finished = (): void => onTaskDone?.(++done, submitted);
  const submit = (req: SubmitRequest): ReturnType<Runtime['submit']> => {
    const handle = rt.submit({ ...req, tags: req.tags ? { ...req.tags, ...tags } : tags });
    submitted++;
    // A failed task is reported by the workload itself; here it only counts as no progress.
    if (onTaskDone) handle.done.then(finished, () => undefined);
    return handle;
  };
  // Methods run on the real runtime (its private fields are not on the proxy), bound once each: a
  // workload calls rt.tensor/read/free per task, and a bound function per call would be garbage.
  const bound = new Map<PropertyKey, unknown>();
  return new Proxy(rt, {
    get(target, prop) {
      if (prop === 'submit') return submit;
      const value: unknown = Reflect.get(target, prop, target);
      if (typeof value !== 'function') return value;
      let f = bound.get(prop);
      if (f === undefined) bound.set(prop, (f = (value as (...a: unknown[]) => unknown).bind(target)));
      return f;
    },
  });
}

/**
 * Progress of a workload run: MD by completed steps (the workload reports each step's last task), the
 * Monte Carlo types by completed tasks (all are submitted before the first can finish).
 */
function progressOf(w: WorkloadJobType, ctx: JobContext<Params>) {
  const stepwise = w.name === 'md';
  const onRow = (row: Record<string, unknown>): void => {
    if (!stepwise) return;
    const step = Number(row['step'] ?? NaN);
    const steps = Number(row['steps'] ?? ctx.params['steps'] ?? 0);
    if (steps > 0 && Number.isFinite(step)) ctx.progress(step / steps, `step ${step}/${steps}`);
  };
  const onTaskDone = stepwise
    ? undefined
    : (done: number, submitted: number): void => ctx.progress(done / submitted, `task ${done}/${submitted}`);
  return { onRow, onTaskDone };
}

function wrap(w: WorkloadJobType): AnyJobType {
  return defineJobType<Params>({
    name: w.name,
    description: w.summary,
    // The workload's validator is the authority; the schema only bounds the shape.
    paramsSchema: { type: 'object', maxProperties: 32 },
    parse(raw) {
      w.validate(raw);
      return raw;
    },
    // Their footprints are small next to device memory (MD: ~100 B/atom; risk: streamed in tasks).
    memoryBytes: (p) =>
      w.name === 'md' ? 128 * Number(p['atoms'] ?? 4 * Number(p['cells'] ?? 10) ** 3) : 64 << 20,
    jobClass: () => JOB_CLASS[w.name],
    requestedDevice: (p) =>
      typeof p['device'] === 'string' && p['device'] !== 'auto' ? p['device'] : undefined,
    async run(ctx: JobContext<Params>) {
      // The workloads run on the full Runtime (the service always holds one when a device is open).
      const rt = requireRuntime(ctx) as unknown as Runtime;
      const device =
        ctx.params['device'] ??
        (ctx.placement.device && KINDS.has(ctx.placement.device) ? ctx.placement.device : undefined);
      const params = device === undefined ? ctx.params : { ...ctx.params, device };
      const { onRow, onTaskDone } = progressOf(w, ctx);
      const result = await w.run(runtimeForJob(rt, ctx.tags, onTaskDone), params, onRow);
      // No cancellation point inside a workload run: a cancel takes effect when it returns.
      if (ctx.aborted ?? ctx.signal.aborted)
        throw new TandemError('TANDEM_ERR_CANCELLED', 'cancelled while running');
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
