/**
 * What the runtime works out for every task it submits, cached where it does not depend on the call:
 * the workers that may run a kernel (per kernel and device constraint) and a kernel's access modes
 * (per definition, when its modes do not depend on scalars). A task then allocates neither.
 */
import type { Scalars, TensorDesc } from '../devices/device.js';
import type { AccessMode, KernelDef } from '../kernels/kernel.js';
import { argMode } from '../kernels/kernel.js';
import type { Tensor } from '../memory/tensor.js';
import type { RegisteredKernel } from './kernel-registry.js';
import type { WorkerSlot } from './policies/policy.js';
import type { Task } from './task.js';

/** Eligible workers of one kernel per device constraint, valid while it has `implCount` impls. */
interface EligibleEntry {
  implCount: number;
  readonly byConstraint: Map<string | null, readonly number[]>;
}

const NO_MODES: readonly AccessMode[] = Object.freeze([]);

export class KernelEligibility {
  /** Eligible workers per kernel when no device filters by arguments (see eligibleFor). */
  private readonly eligibleByKernel = new Map<RegisteredKernel, EligibleEntry>();
  /** Access modes of kernels whose modes do not depend on scalars, shared by their tasks. */
  private readonly staticModes = new WeakMap<KernelDef, readonly AccessMode[]>();

  constructor(
    private readonly workers: readonly WorkerSlot[],
    /** Devices lost for good, by id: never eligible. */
    private readonly lost: ReadonlyMap<string, unknown>,
  ) {}

  /** Forgets the eligible workers kept per kernel (a kernel registered, a device lost). */
  invalidate(): void {
    this.eligibleByKernel.clear();
  }

  modesOf(def: KernelDef, scalars: Scalars): readonly AccessMode[] {
    if (def.args.length === 0) return NO_MODES;
    if (def.modes) return def.args.map((_, i) => argMode(def, i, scalars));
    let m = this.staticModes.get(def);
    if (!m) this.staticModes.set(def, (m = Object.freeze(def.args.map((a) => a.mode))));
    return m;
  }

  /**
   * The rule every eligibility check starts from: w's kind implements `op`, the device is not lost and
   * does not list `op` in its unavailableOps, and it matches the constraint (a kind or an id; null: any).
   */
  private takes(
    w: WorkerSlot,
    op: string,
    impls: ReadonlyMap<string, unknown>,
    constraint: string | null | undefined,
  ): boolean {
    const info = w.device.info;
    if (!impls.has(info.kind) || this.lost.has(info.id)) return false;
    if (w.device.unavailableOps?.has(op)) return false;
    return !constraint || constraint === info.kind || constraint === info.id;
  }

  /** Eligibility when no device filters by arguments: by kernel and constraint only, kept per kernel. */
  eligibleOf(k: RegisteredKernel, constraint: string | null): readonly number[] {
    let e = this.eligibleByKernel.get(k);
    if (!e || e.implCount !== k.impls.size) {
      // An implementation added since (kernels.implement): start over for this kernel.
      e = { implCount: k.impls.size, byConstraint: new Map() };
      this.eligibleByKernel.set(k, e);
    }
    let out = e.byConstraint.get(constraint);
    if (!out) {
      const list: number[] = [];
      for (const w of this.workers) if (this.takes(w, k.def.name, k.impls, constraint)) list.push(w.index);
      e.byConstraint.set(constraint, (out = list));
    }
    return out;
  }

  /**
   * Whether a worker of `constraint` (a kind or an id) implements `k` and accepts these arguments
   * (`Device.supports`: WebGPU's f32-only kernels decline f16): what a task so constrained would need.
   */
  canRun(
    k: RegisteredKernel,
    args: Readonly<Record<string, Tensor>>,
    scalars: Scalars,
    constraint: string,
  ): boolean {
    const descs: TensorDesc[] = [];
    for (const a of k.def.args) {
      const t = args[a.name];
      if (t === undefined) return false;
      descs.push(t.desc);
    }
    for (const w of this.workers) {
      if (!this.takes(w, k.def.name, k.impls, constraint)) continue;
      const info = w.device.info;
      if (w.device.supports && !w.device.supports(k.def.name, descs, scalars, k.impls.get(info.kind)))
        continue;
      return true;
    }
    return false;
  }

  /** Eligibility per task: some device decides by the call's arguments (`Device.supports`). */
  eligibleFor(task: Task, impls: ReadonlyMap<string, unknown>): readonly number[] {
    const descs = task.tensors.map((t) => t.desc);
    const out: number[] = [];
    for (const w of this.workers) {
      if (!this.takes(w, task.op, impls, task.constraint)) continue;
      const info = w.device.info;
      if (w.device.supports && !w.device.supports(task.op, descs, task.scalars, impls.get(info.kind)))
        continue;
      out.push(w.index);
    }
    return out;
  }
}
