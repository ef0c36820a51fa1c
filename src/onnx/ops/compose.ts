/**
 * The device operations composed ops (RNN cells, Einsum) are built from, on one LowerTarget: each
 * allocates its result as a scratch tensor of the node's float dtype (or writes `into`), so a
 * composition reads as the arithmetic it performs. A reshape is a copy (the runtime has no views).
 */
import type { Tensor } from '../../memory/tensor.js';
import type { LowerTarget } from './types.js';

export class DeviceOps {
  constructor(
    private readonly t: LowerTarget,
    private readonly like: Tensor,
  ) {}
  tmp(dims: readonly number[]): Tensor {
    return this.t.scratch(dims, this.like);
  }
  slice(x: Tensor, axis: number, start: number, end: number, into?: Tensor): Tensor {
    const dims = x.shape.map((d, i) => (i === axis ? end - start : d));
    const y = into ?? this.tmp(dims);
    this.t.submit(
      'onnx_slice',
      { x, y },
      { starts: `${start}`, ends: `${end}`, axes: `${axis}`, steps: '1' },
    );
    return y;
  }
  /** x[start:end:step] along one axis. */
  sliceStep(x: Tensor, axis: number, start: number, end: number, step: number, into?: Tensor): Tensor {
    const n = Math.ceil((end - start) / step);
    const y = into ?? this.tmp(x.shape.map((d, i) => (i === axis ? n : d)));
    this.t.submit(
      'onnx_slice',
      { x, y },
      { starts: `${start}`, ends: `${end}`, axes: `${axis}`, steps: `${step}` },
    );
    return y;
  }
  binary(op: 'add' | 'sub' | 'mul' | 'div', a: Tensor, b: Tensor, into?: Tensor): Tensor {
    const dims = a.shape.length >= b.shape.length ? a.shape : b.shape;
    const c = into ?? this.tmp(dims);
    this.t.submit('onnx_binary', { a, b, c }, { op });
    return c;
  }
  map(program: string, x: Tensor, into?: Tensor): Tensor {
    const y = into ?? this.tmp(x.shape);
    this.t.submit('onnx_map', { x, y }, { program });
    return y;
  }
  matmul(a: Tensor, b: Tensor, dims: readonly number[]): Tensor {
    const c = this.tmp(dims);
    this.t.submit('onnx_matmul', { a, b, c });
    return c;
  }
  transpose(x: Tensor, perm: readonly number[], into?: Tensor): Tensor {
    const y = into ?? this.tmp(perm.map((p) => x.shape[p]!));
    this.t.submit('onnx_transpose', { x, y }, { perm: perm.join(',') });
    return y;
  }
  reshape(x: Tensor, dims: readonly number[], into?: Tensor): Tensor {
    const y = into ?? this.tmp(dims);
    this.t.submit('copy', { x, y });
    return y;
  }
  concat(x: Tensor, y: Tensor, axis: number, offset: number): void {
    this.t.submit('onnx_concat', { x, y }, { axis, offset });
  }
  reduceSum(x: Tensor, axes: readonly number[], into?: Tensor): Tensor {
    const y = into ?? this.tmp(x.shape.filter((_, i) => !axes.includes(i)));
    this.t.submit('onnx_reduce', { x, y }, { op: 'sum', axes: axes.join(','), keepdims: false });
    return y;
  }
  zeros(dims: readonly number[]): Tensor {
    const y = this.tmp(dims);
    this.t.submit('fill', { y }, { value: 0 });
    return y;
  }
}
