/**
 * The `tandem` package: the runtime and what a program built on it needs — tensors, errors, dtypes,
 * kernel definitions and custom kernels, observers and the trace recorder, scheduler policies, and the
 * device/backend contracts a plug-in backend implements. The job service is `tandem/service`, the
 * workloads (MD, risk, tiled linear algebra) are `tandem/workloads`.
 *
 * Loading this module opens nothing: backends (and their native libraries) load inside
 * `Runtime.create`, and only those asked for.
 */

// The runtime, its configuration and tasks.
export { Runtime, Tensor, type DeviceLoss, type GraphNode, type SubmitRequest } from './runtime/runtime.js';
export type { RuntimeConfig } from './runtime/config.js';
export type { TaskHandle, TaskState } from './runtime/task.js';

// Errors: one catalogue of stable codes.
export { ERROR_CATALOGUE, TandemError, isTandemError, type ErrorCode } from './core/errors.js';

// Element types and shapes (f16/bf16 are raw 16-bit words on the host).
export {
  DTYPES,
  bf16ToF32,
  bytesPerElement,
  f16ToF32,
  f32ToBf16,
  f32ToF16,
  fromNumbers,
  isDType,
  toNumbers,
  type DType,
  type HostArray,
} from './core/dtype.js';
export { numel, type Shape } from './core/shape.js';
export { fillRandom, seededRandom } from './core/seeded-random.js';

// Kernel definitions (`rt.registerKernel(def, impls)`) and the implementations a custom kernel may give.
export type { AccessMode, ArgSpec, Cost, KernelDef } from './kernels/kernel.js';
export type { CudaArgDesc, CudaParam, CudaProgram, Dim3 } from './devices/cuda/kernel-api.js';
export type { UniformWord, WgslCustomKernel, Workgroups } from './devices/webgpu/kernel-api.js';
export type { CustomCpuImpl } from './devices/cpu/protocol.js';
export type { CpuArg, CpuKernel, CpuKernelContext } from './devices/cpu/kernel-api.js';

// Observers: read-only views of tasks and copies; the Chrome-trace/Perfetto recorder is one.
export type { Observer, TaskEvent, TransferEvent } from './obs/observer.js';
export { TraceRecorder, type ChromeTrace, type TraceEvent } from './obs/trace.js';

// Scheduler policies: built-in ones by name (`scheduler: 'dmda'`) or your own object.
export { POLICIES, createPolicy } from './runtime/policies/index.js';
export type { PolicyContext, SchedTask, SchedulerPolicy, WorkerSlot } from './runtime/policies/policy.js';

// The hardware contracts, for a backend plugged in through `backends: [myBackend]`.
export {
  DEVICE_KINDS,
  HARDWARE_KINDS,
  isHardwareKind,
  type Backend,
  type BackendContext,
  type BackendStatus,
  type CopyRoute,
  type Device,
  type DeviceBuffer,
  type DeviceCaps,
  type DeviceInfo,
  type DeviceKind,
  type ExecQueue,
  type HardwareKind,
  type HostBuffer,
  type LaunchArg,
  type LaunchRequest,
  type LaunchTiming,
  type MemoryKind,
  type MemoryNode,
  type ScalarValue,
  type Scalars,
  type TensorDesc,
} from './devices/device.js';
// Simulated devices driven by timing tables (scheduling studies, tests without hardware).
export { simBackend, type SimBackendOptions, type SimDeviceSpec } from './devices/sim/backend.js';
// ONNX import (docs/onnx.md): load a .onnx file and run it on the runtime's devices.
export {
  OnnxExecutor,
  evaluateReference,
  loadOnnxFile,
  parseOnnxModel,
  type InputTensor,
  type OnnxModel,
  type OutputTensor,
  type RunOptions,
} from './onnx/index.js';
