/** Node attributes as plain values, and typed getters that answer a clear error for a wrong type. */
import { TandemError } from '../core/errors.js';
import type { ElemType, HostTensor } from './host-tensor.js';
import { int64, type AttributeProto, type Int64 } from './proto.js';
import { tensorFromProto, type TensorSource } from './tensor-proto.js';

/**
 * What a graph value holds: a tensor, a sequence of tensors, or an optional of either (ONNX's sequence
 * and optional types; maps and sparse tensors are refused).
 */
export type ValueKind = 'tensor' | 'sequence' | 'optional-tensor' | 'optional-sequence';

/** A TYPE_PROTO attribute (Optional's `type`): the kind of value and its tensors' element type. */
export interface TypeAttr {
  readonly valueKind: ValueKind;
  readonly elemType: ElemType;
}

export type AttrValue = number | string | HostTensor | TypeAttr | readonly number[] | readonly string[];

const decoder = new TextDecoder();

export function attributeValue(a: AttributeProto, opType: string, src: TensorSource): AttrValue {
  switch (a.type) {
    case 1:
      return a.f ?? 0;
    case 2:
      return int64(a.i as Int64);
    case 3:
      return decoder.decode(a.s ?? new Uint8Array());
    case 4:
      return tensorFromProto(a.t ?? {}, src);
    case 6:
      return a.floats ?? [];
    case 7:
      return (a.ints ?? []).map((x) => int64(x as Int64));
    case 8:
      return (a.strings ?? []).map((s) => decoder.decode(s));
    default:
      // Sparse tensors and lists of graphs or types: refused by name (model.ts reads graphs and types).
      throw new TandemError(
        'TANDEM_ERR_UNSUPPORTED',
        `onnx: ${opType} attribute '${a.name ?? ''}' has type ${a.type ?? 0} (sparse tensors and lists of graphs or types are not supported)`,
        { op: opType, attribute: a.name },
      );
  }
}

export class Attrs {
  constructor(
    private readonly op: string,
    private readonly map: ReadonlyMap<string, AttrValue>,
  ) {}

  has(name: string): boolean {
    return this.map.has(name);
  }

  private bad(name: string, want: string): TandemError {
    return new TandemError('TANDEM_ERR_BAD_DATA', `onnx: ${this.op} attribute '${name}' must be ${want}`, {
      reason: 'attribute',
      op: this.op,
      attribute: name,
    });
  }

  int(name: string, dflt?: number): number {
    const v = this.map.get(name);
    if (v === undefined) {
      if (dflt === undefined) throw this.bad(name, 'given (it is required)');
      return dflt;
    }
    if (typeof v !== 'number') throw this.bad(name, 'an integer');
    return v;
  }

  float(name: string, dflt: number): number {
    const v = this.map.get(name);
    if (v === undefined) return dflt;
    if (typeof v !== 'number') throw this.bad(name, 'a float');
    return v;
  }

  string(name: string, dflt: string): string {
    const v = this.map.get(name);
    if (v === undefined) return dflt;
    if (typeof v !== 'string') throw this.bad(name, 'a string');
    return v;
  }

  ints(name: string): readonly number[] | undefined {
    const v = this.map.get(name);
    if (v === undefined) return undefined;
    if (!Array.isArray(v) || v.some((x) => typeof x !== 'number')) throw this.bad(name, 'a list of integers');
    return v as readonly number[];
  }

  floats(name: string): readonly number[] | undefined {
    return this.ints(name);
  }

  strings(name: string): readonly string[] | undefined {
    const v = this.map.get(name);
    if (v === undefined) return undefined;
    if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) throw this.bad(name, 'a list of strings');
    return v as readonly string[];
  }

  tensor(name: string): HostTensor | undefined {
    const v = this.map.get(name);
    if (v === undefined) return undefined;
    if (typeof v !== 'object' || Array.isArray(v) || !('data' in v)) throw this.bad(name, 'a tensor');
    return v;
  }

  type(name: string): TypeAttr | undefined {
    const v = this.map.get(name);
    if (v === undefined) return undefined;
    if (typeof v !== 'object' || !('valueKind' in v)) throw this.bad(name, 'a type');
    return v;
  }
}
