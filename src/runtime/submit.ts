/** Validation of `rt.submit` requests: everything is checked before anything is recorded. */
import { TandemError } from '../core/errors.js';
import type { Scalars, ScalarValue, TensorDesc } from '../devices/device.js';
import type { Cost, KernelDef } from '../kernels/kernel.js';
import type { Tensor } from '../memory/tensor.js';
import { Task } from './task.js';
import type { TaskHandle } from './task.js';

export interface SubmitRequest {
  readonly kernel: string;
  readonly args?: Readonly<Record<string, Tensor>>;
  readonly scalars?: Readonly<Record<string, ScalarValue>>;
  /** Higher runs first under priority-aware policies. */
  readonly priority?: number;
  /** A device kind ('cpu', 'cuda', 'webgpu') or id ('cuda0') the task must run on. */
  readonly device?: string;
  readonly deps?: readonly TaskHandle[];
  readonly name?: string;
  /** Labels carried into trace events (job id, tenant). */
  readonly tags?: Readonly<Record<string, string>>;
}

export interface ValidatedSubmit {
  readonly tensors: Tensor[];
  readonly scalars: Scalars;
  readonly priority: number;
  readonly constraint: string | null;
  readonly deps: Task[];
  readonly cost: Cost;
}

interface RuntimeView {
  checkTensor(t: unknown, what: string): asserts t is Tensor;
  readonly devices: ReadonlyArray<{ readonly info: { readonly id: string; readonly kind: string } }>;
}

function bad(msg: string, details: Record<string, unknown> = {}): TandemError {
  return new TandemError('TANDEM_ERR_INVALID_ARGUMENT', msg, details);
}

export function validateSubmit(rt: RuntimeView, def: KernelDef, req: SubmitRequest): ValidatedSubmit {
  const what = `submit(${def.name})`;
  const args = req.args ?? {};
  if (typeof args !== 'object' || args === null) throw bad(`${what}: args must be an object of tensors`);
  for (const name of Object.keys(args)) {
    if (!def.args.some((a) => a.name === name)) {
      throw bad(
        `${what}: unknown argument ${JSON.stringify(name)}; expected ${def.args.map((a) => a.name).join(', ') || 'none'}`,
      );
    }
  }
  const tensors: Tensor[] = [];
  const descs: Record<string, TensorDesc> = {};
  for (const spec of def.args) {
    const t = args[spec.name];
    if (t === undefined) throw bad(`${what}: missing tensor argument ${JSON.stringify(spec.name)}`);
    rt.checkTensor(t, `${what} argument ${spec.name}`);
    tensors.push(t);
    descs[spec.name] = t.desc;
  }
  const scalars = req.scalars ?? {};
  if (typeof scalars !== 'object' || scalars === null || Array.isArray(scalars))
    throw bad(`${what}: scalars must be an object`);
  for (const [k, v] of Object.entries(scalars)) {
    const ok = (typeof v === 'number' && !Number.isNaN(v)) || typeof v === 'boolean' || typeof v === 'string';
    if (!ok) throw bad(`${what}: scalar ${k} must be a number, boolean or string`);
  }
  def.validate(descs, scalars);
  const priority = req.priority ?? 0;
  if (typeof priority !== 'number' || !Number.isFinite(priority))
    throw bad(`${what}: priority must be a finite number`);
  let constraint: string | null = null;
  if (req.device !== undefined) {
    if (typeof req.device !== 'string') throw bad(`${what}: device must be a string`);
    if (!rt.devices.some((d) => d.info.kind === req.device || d.info.id === req.device)) {
      throw new TandemError(
        'TANDEM_ERR_NO_DEVICE',
        `${what}: no device ${JSON.stringify(req.device)} is open`,
        {
          devices: rt.devices.map((d) => d.info.id),
        },
      );
    }
    constraint = req.device;
  }
  const deps: Task[] = [];
  for (const d of req.deps ?? []) {
    if (!(d instanceof Task)) throw bad(`${what}: deps must be tasks returned by submit`);
    deps.push(d);
  }
  return { tensors, scalars, priority, constraint, deps, cost: def.cost(descs, scalars) };
}
