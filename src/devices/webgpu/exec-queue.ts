/**
 * The WebGPU execution queue. A launch plans its steps (kernel data), compiles what it needs (cached)
 * and then encodes and submits — submissions keep launch order even when an earlier launch is still
 * compiling, because each submit waits for the one before it (not for its completion, so the GPU
 * stays fed). Completion is learned from queue.onSubmittedWorkDone(), never by blocking.
 */
import { TandemError, asTandemError } from '../../core/errors.js';
import type { ExecQueue, LaunchRequest, LaunchTiming, Scalars, TensorDesc } from '../device.js';
import {
  isWebGpuKernel,
  isWgslCustomKernel,
  type UniformWord,
  type WebGpuFeatures,
  type WebGpuStep,
  type WgslCustomKernel,
  type Workgroups,
} from './kernel-api.js';
import { isWebGpuBuffer, type WebGpuBuffer } from './memory-node.js';
import type { PipelineCache } from './pipeline-cache.js';

interface PreparedStep {
  readonly step: WebGpuStep;
  readonly pipeline?: GPUComputePipeline;
  readonly grid?: readonly [number, number, number];
}

export interface QueueDeps {
  readonly device: GPUDevice;
  readonly pipelines: PipelineCache;
  readonly features: WebGpuFeatures;
  readonly uniformUsage: number;
  /** Null while the device is usable; the reason once it is lost or closed. */
  readonly alive: () => Error | null;
}

/** Plans the steps of a launch from its implementation: a built-in kernel or a user's WGSL. */
export function planLaunch(
  op: string,
  impl: unknown,
  args: readonly TensorDesc[],
  scalars: Scalars,
  features: WebGpuFeatures,
): readonly WebGpuStep[] {
  if (isWebGpuKernel(impl)) {
    if (!impl.supports(args, scalars, features)) {
      const dtypes = args.map((a) => a.dtype).join(', ');
      throw new TandemError(
        'TANDEM_ERR_DTYPE',
        `webgpu: '${op}' does not support these arguments (${dtypes}) here`,
      );
    }
    return impl.plan(args, scalars, features);
  }
  if (isWgslCustomKernel(impl)) return [customStep(impl, args, scalars)];
  throw new TandemError(
    'TANDEM_ERR_INVALID_ARGUMENT',
    `webgpu: the implementation of '${op}' is not a WebGPU kernel`,
  );
}

function customStep(k: WgslCustomKernel, args: readonly TensorDesc[], scalars: Scalars): WebGpuStep {
  const uniforms: UniformWord[] | undefined = k.uniforms?.map(({ name, type }) => {
    const v = scalars[name];
    if (typeof v !== 'number' && typeof v !== 'boolean') {
      throw new TandemError(
        'TANDEM_ERR_INVALID_ARGUMENT',
        `custom WGSL kernel: scalar '${name}' must be a number`,
      );
    }
    return { type, value: Number(v) };
  });
  return {
    kind: 'dispatch',
    wgsl: k.wgsl,
    entry: k.entry,
    ...(k.constants ? { constants: k.constants } : {}),
    bind: args.map((_, i) => i),
    ...(uniforms && uniforms.length > 0 ? { uniforms } : {}),
    workgroups: typeof k.workgroups === 'function' ? k.workgroups(args, scalars) : k.workgroups,
  };
}

export function packUniforms(words: readonly UniformWord[]): ArrayBuffer {
  const buf = new ArrayBuffer(Math.max(16, Math.ceil((words.length * 4) / 16) * 16));
  const view = new DataView(buf);
  words.forEach((w, i) => {
    if (w.type === 'f32') view.setFloat32(i * 4, w.value, true);
    else if (w.type === 'i32') view.setInt32(i * 4, w.value, true);
    else view.setUint32(i * 4, w.value >>> 0, true);
  });
  return buf;
}

export function gridOf(w: Workgroups, maxPerDim: number): [number, number, number] {
  if (!('linear' in w)) return [w[0], w[1], w[2]];
  const x = Math.min(w.linear, maxPerDim);
  const y = x === 0 ? 0 : Math.ceil(w.linear / x);
  if (y > maxPerDim) {
    throw new TandemError(
      'TANDEM_ERR_LIMIT',
      `webgpu: ${w.linear} workgroups exceed ${maxPerDim}² per dispatch`,
    );
  }
  return [x, y, 1];
}

export class WebGpuQueue implements ExecQueue {
  /** Resolves when the previous launch has been submitted (or failed before submitting). */
  private submitTail: Promise<void> = Promise.resolve();
  /** Per task still in flight: the error it failed with, or null, known once it has been submitted. */
  private readonly outcomes = new Map<number, Promise<Error | null>>();

  constructor(
    readonly id: string,
    readonly depth: number,
    private readonly deps: QueueDeps,
  ) {}

  launch(req: LaunchRequest, done: (err: Error | null, timing?: LaunchTiming) => void): void {
    const prepared = this.prepare(req);
    // submit() may give up before awaiting it (a failed predecessor): keep its rejection handled.
    prepared.catch(() => undefined);
    const before = req.after.map((id) => this.outcomes.get(id)).filter((p) => p !== undefined);
    const submitted = this.submitTail.then(() => this.submit(req, prepared, before));
    this.submitTail = submitted.then(
      () => undefined,
      () => undefined,
    );
    const fail = (e: unknown): Error => asTandemError(e, 'TANDEM_ERR_KERNEL_FAILED', `${this.id} ${req.op}`);
    // Dependents chained onto this launch wait for its validation only, not for the GPU to finish it.
    this.outcomes.set(
      req.taskId,
      submitted.then(
        (s) => s.validation.then(() => null, fail),
        (e: unknown) => fail(e),
      ),
    );
    submitted
      .then((s) => Promise.all([s.validation, s.completion]))
      .then(
        () => {
          this.outcomes.delete(req.taskId);
          done(null);
        },
        (e: unknown) => {
          this.outcomes.delete(req.taskId);
          done(fail(e));
        },
      );
  }

  /** Plans and compiles; starts at once, so compiling overlaps earlier launches' work. */
  private async prepare(req: LaunchRequest): Promise<{ steps: PreparedStep[]; buffers: WebGpuBuffer[] }> {
    const buffers = req.args.map((a, i) => {
      if (!isWebGpuBuffer(a.buffer)) {
        throw new TandemError(
          'TANDEM_ERR_INTERNAL',
          `${this.id}: argument ${i} of '${req.op}' is not a WebGPU buffer`,
        );
      }
      return a.buffer;
    });
    const plan = planLaunch(
      req.op,
      req.impl,
      req.args.map((a) => a.desc),
      req.scalars,
      this.deps.features,
    );
    const steps = await Promise.all(
      plan.map(async (step): Promise<PreparedStep> =>
        step.kind === 'dispatch'
          ? {
              step,
              grid: gridOf(step.workgroups, this.deps.features.maxWorkgroupsPerDimension),
              pipeline: await this.deps.pipelines.get(step),
            }
          : { step },
      ),
    );
    return { steps, buffers };
  }

  /**
   * Encodes and submits. The promises come back wrapped in an object so that the submit chain, which
   * awaits this function, waits for the submission only — not for validation or the GPU.
   */
  private async submit(
    req: LaunchRequest,
    prepared: Promise<{ steps: PreparedStep[]; buffers: WebGpuBuffer[] }>,
    before: Promise<Error | null>[],
  ): Promise<{ validation: Promise<void>; completion: Promise<void> }> {
    // A failed predecessor is the cause to report, even when this launch could not be prepared either.
    for (const err of await Promise.all(before)) {
      if (err)
        throw new TandemError(
          'TANDEM_ERR_DEPENDENCY_FAILED',
          `${req.op}: an earlier task failed: ${err.message}`,
        );
    }
    const { steps, buffers } = await prepared;
    const dead = this.deps.alive();
    if (dead) throw dead;
    const { device } = this.deps;
    const temporaries: GPUBuffer[] = [];
    device.pushErrorScope('validation');
    const enc = device.createCommandEncoder({ label: `${req.op}#${req.taskId}` });
    for (const { step, pipeline, grid } of steps) {
      if (step.kind === 'copy') {
        const bytes = Math.ceil(step.bytes / 4) * 4;
        if (bytes > 0) enc.copyBufferToBuffer(buffers[step.src]!.gpu, 0, buffers[step.dst]!.gpu, 0, bytes);
        continue;
      }
      const [x, y, z] = grid!;
      if (x * y * z === 0) continue;
      const entries: GPUBindGroupEntry[] = step.bind.map((argIndex, binding) => ({
        binding,
        resource: { buffer: buffers[argIndex]!.gpu },
      }));
      if (step.uniforms) {
        const data = packUniforms(step.uniforms);
        const ub = device.createBuffer({ size: data.byteLength, usage: this.deps.uniformUsage });
        device.queue.writeBuffer(ub, 0, data);
        temporaries.push(ub);
        entries.push({ binding: step.bind.length, resource: { buffer: ub } });
      }
      const pass = enc.beginComputePass();
      pass.setPipeline(pipeline!);
      pass.setBindGroup(0, device.createBindGroup({ layout: pipeline!.getBindGroupLayout(0), entries }));
      pass.dispatchWorkgroups(x, y, z);
      pass.end();
    }
    device.queue.submit([enc.finish()]);
    const validation = device.popErrorScope().then((error) => {
      if (error) {
        throw new TandemError(
          'TANDEM_ERR_KERNEL_FAILED',
          `${this.id} '${req.op}' was rejected by WebGPU: ${error.message}`,
        );
      }
    });
    const completion = device.queue.onSubmittedWorkDone().then(() => {
      for (const t of temporaries) t.destroy();
      const lost = this.deps.alive();
      if (lost) throw lost;
    });
    return { validation, completion };
  }
}
