/**
 * Runs a bound plan on the runtime: every device step's kernels are submitted as tasks (the scheduler
 * places them on CPU, CUDA or WebGPU, or where the caller's `device` constrains them), each
 * intermediate tensor is freed as soon as its last reader has been submitted, and weights (values that
 * depend on no input) are uploaded once and kept for later runs.
 */
import type { DType } from '../core/dtype.js';
import { TandemError } from '../core/errors.js';
import type { Tensor } from '../memory/tensor.js';
import { SequenceCollector } from '../runtime/sequence-collector.js';
import type { TaskHandle } from '../runtime/task.js';
import { deviceDType, fromDevice, scratchMakers, toDevice } from './device-data.js';
import { hostTensor, isFloatType, type ElemType } from './host-tensor.js';
import type { OnnxModel } from './model.js';
import { ONNX_OPS } from './ops/table.js';
import type { LowerTarget } from './ops/types.js';
import { bindPlan, type BoundInput, type Plan, type PlannedValue } from './plan.js';
import { profileFromEnv, StepProfiler, type OnnxProfile } from './profile.js';
import type { InputTensor, OnnxRuntime, OutputTensor, RunOptions } from './run-types.js';
import { KernelPlacement } from './fallback.js';
import { checkOperators, needsInterpreter } from './control/ops.js';
import { runInterpreted, tensorsOnly, type InputValue, type OutputValue } from './control/run.js';

export type {
  InputValue,
  OutputValue,
  SequenceInput,
  OptionalInput,
  SequenceOutput,
  OptionalOutput,
} from './control/run.js';
import { imageDims, submitImageNormalize, submitIoKernel } from './image-feed.js';

export type { InputTensor, OnnxRuntime, OutputTensor, RunOptions } from './run-types.js';

const MAX_CACHED_PLANS = 16;
/** Graph input/output tensors kept between runs (by name, dtype and dims); the oldest is freed first. */
const MAX_IO_TENSORS = 8;
/** Float inputs up to this many elements are known to the planner too (and key its cache). */
const HOST_KNOWN_FLOATS = 16;

export class OnnxExecutor {
  private readonly plans = new Map<string, Plan>();
  /** Device copies of constant values by name, per compute dtype. */
  private readonly weights = new Map<string, Tensor>();
  /**
   * Large graph inputs and the graph outputs, kept between runs of the same shapes: a run rewrites the
   * same host buffer (page-locked once by the CUDA backend) and device memory instead of allocating
   * and registering new ones; the runtime orders the rewrite after the previous run's readers.
   */
  private readonly io = new Map<string, Tensor>();
  private closed = false;
  /** Device steps of the last run's plan (0: everything was folded on the host). */
  lastPlanSteps = 0;
  /** The last profiled run's per-node profile (RunOptions.profile). */
  lastProfile: OnnxProfile | undefined;
  /** Nodes (op:name) of the last run with a kernel on the fallback device (RunOptions.fallback). */
  lastFallbacks: readonly string[] = [];

  /** Graph inputs some node reads at one of its op's hostInputs: bound with their values. */
  private readonly hostRead: ReadonlySet<string>;
  /** Subgraphs, sequences or optionals: run node by node by the interpreter (control/), not planned. */
  readonly interpreted: boolean;

  constructor(
    readonly model: OnnxModel,
    private readonly rt: OnnxRuntime,
  ) {
    this.interpreted = needsInterpreter(model);
    // Every op of every subgraph is checked now: an unsupported one is refused before any run starts.
    if (this.interpreted) checkOperators(model);
    const graphInputs = new Set(model.inputs.map((v) => v.name));
    this.hostRead = new Set(
      model.nodes.flatMap((n) => {
        const host = n.domain === '' ? ONNX_OPS[n.opType]?.hostInputs : undefined;
        return (host ?? []).map((i) => n.inputs[i] ?? '').filter((v) => graphInputs.has(v));
      }),
    );
  }

  /** Bytes of the weights uploaded so far (device memory held between runs). */
  get weightBytes(): number {
    let n = 0;
    for (const t of this.weights.values()) n += t.bytes;
    return n;
  }

  plan(inputs: ReadonlyMap<string, BoundInput>): Plan {
    const key = [...inputs]
      .map(
        ([k, v]) => `${k}:${v.type}:${v.dims.join('x')}:${v.host ? Array.from(v.host.data).join(',') : '-'}`,
      )
      .join('|');
    let p = this.plans.get(key);
    if (!p) {
      p = bindPlan(this.model, inputs);
      if (this.plans.size >= MAX_CACHED_PLANS) this.plans.delete(this.plans.keys().next().value!);
      this.plans.set(key, p);
    }
    return p;
  }

  async run(
    feeds: Readonly<Record<string, InputTensor>>,
    opts: RunOptions = {},
  ): Promise<Record<string, OutputTensor>> {
    if (this.closed) throw new TandemError('TANDEM_ERR_CLOSED', 'onnx: the model has been unloaded');
    if (this.interpreted) {
      return tensorsOnly(await this.runValues(feeds, opts));
    }
    const floatDType = opts.floatDType ?? 'f32';
    const bound = new Map<string, BoundInput>();
    const feedTensors = new Map<string, InputTensor>();
    for (const [name, f] of Object.entries(feeds)) {
      const info = this.model.inputs.find((v) => v.name === name);
      const type = f.type ?? info?.type ?? 'float';
      const n = f.dims.reduce((a, b) => a * b, 1);
      if (!Array.isArray(f.dims) || f.data.length !== n) {
        throw new TandemError(
          'TANDEM_ERR_SHAPE',
          `onnx: input '${name}' of shape [${f.dims.join(', ')}] needs ${n} values, got ${f.data.length}`,
          { input: name },
        );
      }
      if (opts.images?.[name]) {
        bound.set(name, { type: info?.type ?? 'float', dims: imageDims(name, f, info?.type) });
        continue;
      }
      // Small inputs are also known to the planner (Resize scales or Clip bounds given as inputs), and
      // so are inputs an op must read on the host (NonMaxSuppression's boxes); other float data goes
      // to the device only, without a float64 copy.
      const known = !isFloatType(type) || n <= HOST_KNOWN_FLOATS || this.hostRead.has(name);
      bound.set(name, {
        type,
        dims: [...f.dims],
        host: known ? hostTensor(type, f.dims, f.data) : undefined,
      });
      feedTensors.set(name, { dims: f.dims, data: f.data, type });
    }
    const plan = this.plan(bound);
    this.lastPlanSteps = plan.steps.length;
    const live = new Map<string, Tensor>();
    /** Tensors of `io`: not freed at the end of the run. */
    const kept = new Set<Tensor>();
    const outputs = new Set(this.model.outputs.map((o) => o.name));
    const dtypeOf = (t: ElemType): DType => deviceDType(t, floatDType);
    const profiler = (opts.profile ?? profileFromEnv()) ? new StepProfiler(plan) : undefined;
    const placement = new KernelPlacement(
      this.rt,
      opts.device,
      opts.fallback === undefined ? 'cpu' : opts.fallback,
    );
    for (const [name, f] of feedTensors) {
      const v = plan.values.get(name);
      if (!v || v.host || !plan.lastReader.has(name)) continue;
      const started = profiler ? performance.now() : 0;
      const dtype = dtypeOf(v.type);
      // An f16/bf16 run takes its float inputs up as f32 and narrows them on its device (one cast)
      // instead of encoding every element on the host (~0.3 s for 16 images of 640x640 in JS).
      const narrow = dtype === 'f16' || dtype === 'bf16';
      const upload: DType = narrow ? 'f32' : dtype;
      const data = upload === 'f32' && f.data instanceof Float32Array ? f.data : toDevice(f.data, upload);
      const key = `in:${name}:${upload}:${v.dims.join('x')}`;
      let t = this.io.get(key);
      if (t) await this.rt.write(t, data);
      else t = this.keepIo(key, this.rt.tensor(v.dims, upload, data));
      kept.add(t);
      let y = t;
      if (narrow) {
        y = this.rt.tensor(v.dims, dtype);
        submitIoKernel(this.rt, 'cast', { x: t, y }, {}, `cast:input:${name}`, placement, opts.tags);
      }
      live.set(name, y);
      // The host side of the upload (into the tensor's host buffer); the copy to the device happens at
      // the first kernel that reads it, inside that step's time.
      profiler?.recordExtra(name, 'Input', performance.now() - started, v.dims);
    }
    for (const [name, image] of Object.entries(opts.images ?? {})) {
      const f = feeds[name];
      const v = plan.values.get(name);
      if (!f || !v || !plan.lastReader.has(name)) continue;
      const started = profiler ? performance.now() : 0;
      // The bytes go through the kept I/O tensors like any input; the float image is an intermediate,
      // freed after its last reader.
      const key = `img:${name}:${f.dims.join('x')}`;
      let x = this.io.get(key);
      if (x) await this.rt.write(x, f.data as Uint8Array);
      else x = this.keepIo(key, this.rt.tensor(f.dims, 'u8', f.data as Uint8Array));
      kept.add(x);
      const y = this.rt.tensor(v.dims, dtypeOf(v.type));
      const h = submitImageNormalize(this.rt, { x, y }, image, name, placement, opts.tags);
      live.set(name, y);
      if (profiler) {
        await h.done;
        profiler.recordExtra(name, 'Input', performance.now() - started, v.dims);
      }
    }
    const deviceTensor = (name: string, v: PlannedValue): Tensor => {
      const have = live.get(name) ?? (v.constant ? this.weights.get(`${floatDType}:${name}`) : undefined);
      if (have) return have;
      // Graph inputs come from this run's feeds (the cached plan holds the first run's values).
      const feed = feedTensors.get(name);
      const host = feed ?? v.host;
      if (!host) throw new TandemError('TANDEM_ERR_INTERNAL', `onnx: value '${name}' has no producer`);
      const dtype = dtypeOf(v.type);
      const t = this.rt.tensor(
        v.dims,
        dtype,
        dtype === 'f32' && host.data instanceof Float32Array ? host.data : toDevice(host.data, dtype),
      );
      if (v.constant) this.weights.set(`${floatDType}:${name}`, t);
      else live.set(name, t);
      return t;
    };
    const handles: TaskHandle[] = [];
    // Sequence mode: kernels collected here, intermediates freed once the kernels reading them are out.
    const sequences = opts.sequences === true && !profiler;
    const collector = new SequenceCollector(
      this.rt,
      () => ({
        ...(opts.device === undefined ? {} : { device: opts.device }),
        ...(opts.tags === undefined ? {} : { tags: opts.tags }),
      }),
      'onnx',
    );
    const free = (t: Tensor): void => collector.free(t);
    try {
      for (let k = 0; k < plan.steps.length; k++) {
        const step = plan.steps[k]!;
        const started = profiler ? performance.now() : 0;
        const scratch: Tensor[] = [];
        const target: LowerTarget = {
          gemmPrecision: opts.precision === 'tf32' ? 'tf32' : 'default',
          input: (i) => {
            const name = step.node.inputs[i]!;
            return deviceTensor(name, plan.values.get(name)!);
          },
          output: (i) => {
            const name = step.node.outputs[i]!;
            let t = live.get(name);
            if (!t) {
              const v = step.outputs[i]!;
              const dtype = dtypeOf(v.type);
              if (outputs.has(name)) {
                const key = `out:${name}:${dtype}:${v.dims.join('x')}`;
                t = this.io.get(key) ?? this.keepIo(key, this.rt.tensor(v.dims, dtype));
                kept.add(t);
              } else t = this.rt.tensor(v.dims, dtype);
              live.set(name, t);
            }
            return t;
          },
          ...scratchMakers(this.rt, scratch),
          submit: (kernel, args, scalars) => {
            const node = `${step.node.opType}:${step.node.name}`;
            const device = placement.deviceFor(kernel, args, scalars ?? {}, node);
            if (sequences && device === opts.device) {
              collector.push({ kernel, args, scalars: scalars ?? {} });
              return;
            }
            // A kernel on the fallback device leaves the sequence: what was collected goes first.
            if (sequences) collector.flush();
            const h = this.rt.submit({
              kernel,
              args,
              scalars: scalars ?? {},
              device,
              name: node,
              tags: opts.tags,
            });
            if (profiler) handles.push(h);
          },
        };
        step.impl.lower!(step.call, target, step.outputs);
        for (const t of scratch) free(t);
        for (const n of new Set(step.node.inputs)) {
          if (n !== '' && plan.lastReader.get(n) === k && !outputs.has(n)) {
            const t = live.get(n);
            if (t) {
              if (!kept.has(t)) free(t);
              live.delete(n);
            }
          }
        }
        if (profiler) {
          const submitted = performance.now();
          await Promise.all(handles.map((h) => h.done));
          profiler.record(step, performance.now() - started, submitted - started, handles.length);
          handles.length = 0;
        }
      }
      collector.flush();
      this.lastFallbacks = [...placement.fellBack];
      const result: Record<string, OutputTensor> = {};
      for (const o of this.model.outputs) {
        const v = plan.values.get(o.name)!;
        if (v.host && !live.has(o.name)) {
          result[o.name] = { type: v.type, dims: v.dims, data: Float64Array.from(v.host.data) };
          continue;
        }
        const t = deviceTensor(o.name, v);
        const started = profiler ? performance.now() : 0;
        const read = this.widened(t, o.name, placement, opts.tags);
        const data = await this.rt.read(read);
        result[o.name] = { type: v.type, dims: v.dims, data: fromDevice(data, read.dtype) };
        profiler?.recordExtra(o.name, 'Output', performance.now() - started, v.dims);
      }
      if (profiler) this.lastProfile = profiler.result();
      return result;
    } finally {
      // A run that threw: its collected kernels never go out, so what they held can go at once.
      collector.drop();
      for (const t of live.values()) if (!kept.has(t)) this.rt.free(t);
    }
  }

  /**
   * A run whose inputs and outputs may be sequences or optionals (ONNX's value kinds). Models with control
   * flow or such values run on the interpreter (control/interpreter.ts); others as run() does.
   */
  async runValues(
    feeds: Readonly<Record<string, InputValue>>,
    opts: RunOptions = {},
  ): Promise<Record<string, OutputValue>> {
    if (this.closed) throw new TandemError('TANDEM_ERR_CLOSED', 'onnx: the model has been unloaded');
    if (!this.interpreted) {
      const tensors: Record<string, InputTensor> = {};
      for (const [name, f] of Object.entries(feeds)) {
        if (!('data' in f))
          throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', `onnx: input '${name}' is a tensor`, {
            input: name,
          });
        tensors[name] = f;
      }
      return this.run(tensors, opts);
    }
    const { outputs, fellBack, kernels } = await runInterpreted(this.model, this.rt, feeds, opts);
    this.lastFallbacks = fellBack;
    this.lastPlanSteps = kernels;
    return outputs;
  }

  /**
   * An f16/bf16 graph output widened to f32 on the device (into a kept f32 tensor), so the host reads
   * f32 values instead of decoding 16-bit words; other outputs as they are.
   */
  private widened(t: Tensor, name: string, placement: KernelPlacement, tags: RunOptions['tags']): Tensor {
    if (t.dtype !== 'f16' && t.dtype !== 'bf16') return t;
    const key = `out:${name}:f32:${t.shape.join('x')}`;
    const y = this.io.get(key) ?? this.keepIo(key, this.rt.tensor(t.shape, 'f32'));
    submitIoKernel(this.rt, 'cast', { x: t, y }, {}, `cast:output:${name}`, placement, tags, false);
    return y;
  }

  /** Keeps `t` in the I/O cache under `key`, freeing the oldest entry past MAX_IO_TENSORS. */
  private keepIo(key: string, t: Tensor): Tensor {
    if (this.io.size >= MAX_IO_TENSORS) {
      const [oldKey, old] = this.io.entries().next().value!;
      this.io.delete(oldKey);
      this.rt.free(old);
    }
    this.io.set(key, t);
    return t;
  }

  /** Bytes of the graph input/output tensors kept between runs. */
  get ioBytes(): number {
    let n = 0;
    for (const t of this.io.values()) n += t.bytes;
    return n;
  }

  /** Frees the uploaded weights; the executor is not used after. */
  close(): void {
    this.closed = true;
    for (const t of this.weights.values()) this.rt.free(t);
    this.weights.clear();
    for (const t of this.io.values()) this.rt.free(t);
    this.io.clear();
  }
}
