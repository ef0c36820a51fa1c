/** The runtime's own table of ops and their per-backend implementations (no global registry). */
import { TandemError } from '../core/errors.js';
import type { DeviceKind, Scalars, TensorDesc } from '../devices/device.js';
import type { KernelDef, KernelImplEntry } from '../kernels/kernel.js';

export interface RegisteredKernel {
  readonly def: KernelDef;
  readonly impls: Map<string, unknown>;
}

export class KernelRegistry {
  private readonly kernels = new Map<string, RegisteredKernel>();

  constructor(defs: readonly KernelDef[] = [], impls: readonly KernelImplEntry[] = []) {
    for (const d of defs) this.define(d);
    for (const e of impls) this.implement(e.op, e.backend, e.impl);
  }

  define(def: KernelDef): RegisteredKernel {
    if (!def || typeof def.name !== 'string' || !/^[A-Za-z_][\w.-]{0,63}$/.test(def.name)) {
      throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', `kernel name must match [A-Za-z_][\\w.-]{0,63}`);
    }
    if (!Array.isArray(def.args))
      throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', `kernel ${def.name}: args must be an array`);
    const names = new Set<string>();
    for (const a of def.args) {
      if (names.has(a.name))
        throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', `kernel ${def.name}: argument ${a.name} twice`);
      if (a.mode !== 'r' && a.mode !== 'w' && a.mode !== 'rw') {
        throw new TandemError(
          'TANDEM_ERR_INVALID_ARGUMENT',
          `kernel ${def.name}: argument ${a.name} has mode ${String(a.mode)}`,
        );
      }
      names.add(a.name);
    }
    const existing = this.kernels.get(def.name);
    const k: RegisteredKernel = { def, impls: existing?.impls ?? new Map() };
    this.kernels.set(def.name, k);
    return k;
  }

  /** A kernel of the runtime's user (`Runtime.registerKernel`): its definition and at least one impl. */
  register(def: KernelDef, impls: Partial<Record<DeviceKind, unknown>>): void {
    if (!impls || Object.keys(impls).length === 0) {
      throw new TandemError(
        'TANDEM_ERR_INVALID_ARGUMENT',
        `kernel ${def?.name}: give at least one implementation`,
      );
    }
    this.define(def);
    for (const [kind, impl] of Object.entries(impls))
      if (impl !== undefined) this.implement(def.name, kind as DeviceKind, impl);
  }

  implement(op: string, backend: DeviceKind, impl: unknown): void {
    const k = this.kernels.get(op);
    if (!k)
      throw new TandemError(
        'TANDEM_ERR_UNKNOWN_KERNEL',
        `cannot add a ${backend} implementation: no op ${op}`,
      );
    k.impls.set(backend, impl);
  }

  get(op: string): RegisteredKernel {
    const k = this.kernels.get(op);
    if (!k) {
      throw new TandemError('TANDEM_ERR_UNKNOWN_KERNEL', `no kernel named ${JSON.stringify(op)}`, {
        known: [...this.kernels.keys()].filter((n) => !n.startsWith('__')),
      });
    }
    return k;
  }

  has(op: string): boolean {
    return this.kernels.has(op);
  }

  names(): string[] {
    return [...this.kernels.keys()].filter((n) => !n.startsWith('__'));
  }
}

/**
 * FLOPs of one run of `def` on positional argument descriptors, from its cost model; 0 when the
 * arguments do not fit it (a timing model then falls back to its fixed launch cost).
 */
export function kernelFlops(def: KernelDef, args: readonly TensorDesc[], scalars: Scalars): number {
  const descs: Record<string, TensorDesc> = {};
  def.args.forEach((a, i) => {
    const d = args[i];
    if (d) descs[a.name] = d;
  });
  try {
    return def.cost(descs, scalars).flops;
  } catch {
    return 0;
  }
}
