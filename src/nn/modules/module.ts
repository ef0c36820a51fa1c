/**
 * Modules hold named parameters and sub-modules, like torch.nn.Module: names join with dots
 * ("h.0.attn.c_attn.weight"), which is also how checkpoints name their tensors.
 */
import type { Var } from '../var.js';

export abstract class Module {
  private readonly ownParams = new Map<string, Var>();
  private readonly children = new Map<string, Module>();

  protected param<V extends Var>(name: string, v: V): V {
    this.ownParams.set(name, v);
    return v;
  }

  protected child<M extends Module>(name: string, m: M): M {
    this.children.set(name, m);
    return m;
  }

  /** Every parameter with its dotted name; a parameter shared by two places (tied) is listed once. */
  namedParameters(prefix = '', seen = new Set<Var>()): [string, Var][] {
    const out: [string, Var][] = [];
    for (const [n, v] of this.ownParams) {
      if (seen.has(v)) continue;
      seen.add(v);
      out.push([prefix + n, v]);
    }
    for (const [n, m] of this.children) out.push(...m.namedParameters(`${prefix}${n}.`, seen));
    return out;
  }

  parameters(): Var[] {
    return this.namedParameters().map(([, v]) => v);
  }

  /** Number of parameter elements. */
  parameterCount(): number {
    return this.parameters().reduce((s, v) => s + v.data.size, 0);
  }
}
