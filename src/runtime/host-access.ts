/** Host reads and writes of tensors, run as tasks on the main thread so they order with device work. */
import type { HostArray } from '../core/dtype.js';
import { fromNumbers, hostView } from '../core/dtype.js';
import { TandemError } from '../core/errors.js';
import type { DeviceBuffer, HostBuffer } from '../devices/device.js';
import type { KernelDef } from '../kernels/kernel.js';
import type { Tensor } from '../memory/tensor.js';
import type { TaskKernel } from './task.js';

const noCost = { flops: 0, bytes: 0 };

export const hostReadDef: KernelDef = {
  name: '__read',
  args: [{ name: 'x', mode: 'r' }],
  validate: () => undefined,
  cost: () => noCost,
};

export const hostWriteDef: KernelDef = {
  name: '__write',
  args: [{ name: 'x', mode: 'w' }],
  validate: () => undefined,
  cost: () => noCost,
};

/** Host accesses run on the main thread: no implementations, one shared kernel record each. */
export const hostReadKernel: TaskKernel = { def: hostReadDef, impls: new Map() };
export const hostWriteKernel: TaskKernel = { def: hostWriteDef, impls: new Map() };

const STORAGE: Record<string, string> = {
  f32: 'Float32Array',
  f64: 'Float64Array',
  f16: 'Uint16Array',
  bf16: 'Uint16Array',
  i32: 'Int32Array',
  u8: 'Uint8Array',
};

export function validateHostData(t: Tensor, data: unknown): void {
  const ok = Array.isArray(data) || (ArrayBuffer.isView(data) && !(data instanceof DataView));
  if (!ok)
    throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', `data for ${t} must be an array or a typed array`);
  const len = (data as ArrayLike<number>).length;
  if (len !== t.size) {
    throw new TandemError('TANDEM_ERR_SHAPE', `data for ${t} has ${len} elements, the tensor has ${t.size}`, {
      expected: t.size,
      got: len,
    });
  }
}

export function writeHost(t: Tensor, buf: DeviceBuffer, data: ArrayLike<number>): void {
  const view = hostView(t.dtype, (buf as HostBuffer).sab, 0, t.size);
  // Raw storage words go straight in (Uint16 words for f16/bf16); plain numbers are encoded.
  if (ArrayBuffer.isView(data) && data.constructor.name === STORAGE[t.dtype])
    view.set(data as unknown as ArrayLike<number>);
  else fromNumbers(t.dtype, data, view);
}

export function readHost(t: Tensor, buf: DeviceBuffer): HostArray {
  const view = hostView(t.dtype, (buf as HostBuffer).sab, 0, t.size);
  return view.slice() as HostArray;
}
