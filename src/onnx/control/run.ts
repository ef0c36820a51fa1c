/**
 * A run of a model on the interpreter (interpreter.ts): the feeds, which may be sequences or optionals,
 * bound as values (integer tensors on the host, float tensors uploaded), and the outputs read back.
 */
import { TandemError } from '../../core/errors.js';
import type { Tensor } from '../../memory/tensor.js';
import { deviceDType, fromDevice, toDevice } from '../device-data.js';
import type { InputTensor, OnnxRuntime, OutputTensor, RunOptions } from '../run-types.js';
import { hostTensor, isFloatType, type ElemType } from '../host-tensor.js';
import type { OnnxModel, ValueInfo } from '../model.js';
import { checkInput } from '../plan.js';
import { GraphInterpreter, type InterpreterOptions } from './interpreter.js';
import { hostVal, type RunValue, type TensorVal } from './values.js';

export interface SequenceInput {
  readonly sequence: readonly InputTensor[];
  /** The tensors' element type; the model's declared one when omitted. */
  readonly type?: ElemType;
}
export interface OptionalInput {
  /** null: the empty optional. */
  readonly optional: InputTensor | SequenceInput | null;
}
/** A graph input: a tensor, a sequence of tensors or an optional of either (ONNX's value kinds). */
export type InputValue = InputTensor | SequenceInput | OptionalInput;

export interface SequenceOutput {
  readonly sequence: readonly OutputTensor[];
  readonly type: ElemType;
}
export interface OptionalOutput {
  readonly optional: OutputTensor | SequenceOutput | null;
}
export type OutputValue = OutputTensor | SequenceOutput | OptionalOutput;

/** Loop iterations allowed per Loop node and run unless RunOptions.maxLoopIterations says otherwise. */
export const DEFAULT_MAX_LOOP_ITERATIONS = 1_000_000;

function badFeed(name: string, message: string): TandemError {
  return new TandemError('TANDEM_ERR_INVALID_ARGUMENT', `onnx: input '${name}' ${message}`, { input: name });
}

function bindTensor(
  interp: GraphInterpreter,
  rt: OnnxRuntime,
  model: OnnxModel,
  info: ValueInfo,
  f: InputTensor,
  floatDType: InterpreterOptions['floatDType'],
): TensorVal {
  const type = f.type ?? info.type;
  const n = f.dims.reduce((a, b) => a * b, 1);
  if (f.data.length !== n)
    throw new TandemError(
      'TANDEM_ERR_SHAPE',
      `onnx: input '${info.name}' of shape [${f.dims.join(', ')}] needs ${n} values, got ${f.data.length}`,
      { input: info.name },
    );
  checkInput({ ...model, inputs: [{ ...info, kind: undefined }] }, info.name, { type, dims: f.dims });
  // Integer data is known on the host (trip counts, positions, shapes); float data goes to the device.
  if (!isFloatType(type)) return hostVal(hostTensor(type, f.dims, f.data), false);
  const dtype = deviceDType(type, floatDType);
  let t: Tensor;
  if (dtype === 'f16' || dtype === 'bf16') {
    const up = rt.tensor([...f.dims], 'f32', toDevice(f.data, 'f32'));
    try {
      t = interp.castOnDevice(up, dtype, `cast:input:${info.name}`);
    } finally {
      rt.free(up); // once the cast has read it
    }
  } else t = rt.tensor([...f.dims], dtype, toDevice(f.data, dtype));
  interp.adopt(t);
  return { kind: 'tensor', type, dims: [...f.dims], dev: t, constant: false };
}

function bindFeed(
  interp: GraphInterpreter,
  rt: OnnxRuntime,
  model: OnnxModel,
  info: ValueInfo,
  f: InputValue,
  floatDType: InterpreterOptions['floatDType'],
): RunValue {
  const kind = info.kind ?? 'tensor';
  const seq = (s: SequenceInput): RunValue => {
    if (!Array.isArray(s.sequence)) throw badFeed(info.name, 'must be a sequence');
    const items = s.sequence.map((t) =>
      bindTensor(interp, rt, model, info, { type: s.type, ...t }, floatDType),
    );
    return { kind: 'sequence', elemType: s.type ?? info.type, items };
  };
  if (kind === 'tensor') {
    if (!('data' in f)) throw badFeed(info.name, 'is a tensor');
    return bindTensor(interp, rt, model, info, f, floatDType);
  }
  if (kind === 'sequence') {
    if (!('sequence' in f)) throw badFeed(info.name, 'is a sequence ({sequence: [...]})');
    return seq(f);
  }
  if (!('optional' in f)) throw badFeed(info.name, 'is an optional ({optional: value or null})');
  const inner = f.optional;
  if (inner === null) return { kind: 'optional', value: undefined };
  if (kind === 'optional-sequence') {
    if (!('sequence' in inner)) throw badFeed(info.name, 'is an optional sequence');
    const v = seq(inner);
    return { kind: 'optional', value: v.kind === 'sequence' ? v : undefined };
  }
  if (!('data' in inner)) throw badFeed(info.name, 'is an optional tensor');
  return { kind: 'optional', value: bindTensor(interp, rt, model, info, inner, floatDType) };
}

async function outputOf(
  rt: OnnxRuntime,
  interp: GraphInterpreter,
  v: RunValue,
  name: string,
): Promise<OutputValue> {
  if (v.kind === 'tensor') {
    if (v.host) return { type: v.type, dims: v.dims, data: Float64Array.from(v.host.data) };
    const dev = v.dev!;
    if (dev.dtype !== 'f16' && dev.dtype !== 'bf16')
      return { type: v.type, dims: v.dims, data: fromDevice(await rt.read(dev), dev.dtype) };
    // Widened on the device: the host reads f32 instead of decoding 16-bit words.
    const wide = interp.castOnDevice(dev, 'f32', `cast:output:${name}`);
    try {
      return { type: v.type, dims: v.dims, data: fromDevice(await rt.read(wide), 'f32') };
    } finally {
      rt.free(wide);
    }
  }
  if (v.kind === 'sequence') {
    const items: OutputTensor[] = [];
    for (const t of v.items) items.push((await outputOf(rt, interp, t, name)) as OutputTensor);
    return { sequence: items, type: v.elemType };
  }
  return {
    optional: v.value ? ((await outputOf(rt, interp, v.value, name)) as OutputTensor | SequenceOutput) : null,
  };
}

export async function runInterpreted(
  model: OnnxModel,
  rt: OnnxRuntime,
  feeds: Readonly<Record<string, InputValue>>,
  runOpts: RunOptions,
): Promise<{ outputs: Record<string, OutputValue>; fellBack: string[]; kernels: number }> {
  for (const name of Object.keys(feeds))
    if (!model.inputs.some((v) => v.name === name))
      throw badFeed(
        name,
        `is not an input of the model (inputs: ${model.inputs.map((v) => v.name).join(', ')})`,
      );
  const opts: InterpreterOptions = {
    device: runOpts.device,
    fallback: runOpts.fallback === undefined ? 'cpu' : runOpts.fallback,
    floatDType: runOpts.floatDType ?? 'f32',
    precision: runOpts.precision,
    tags: runOpts.tags,
    maxLoopIterations: runOpts.maxLoopIterations ?? DEFAULT_MAX_LOOP_ITERATIONS,
    signal: runOpts.signal,
  };
  const interp = new GraphInterpreter(model, rt, opts);
  try {
    const bound = new Map<string, RunValue>();
    for (const info of model.inputs) {
      const f = feeds[info.name];
      if (f === undefined) {
        // An optional input left out is the empty optional, as ONNX Runtime reads it.
        if (info.kind?.startsWith('optional')) bound.set(info.name, { kind: 'optional', value: undefined });
        else throw badFeed(info.name, 'is missing');
      } else bound.set(info.name, bindFeed(interp, rt, model, info, f, opts.floatDType));
    }
    const values = await interp.run(bound);
    const outputs: Record<string, OutputValue> = {};
    for (const [i, o] of model.outputs.entries())
      outputs[o.name] = await outputOf(rt, interp, values[i]!, o.name);
    return { outputs, fellBack: [...interp.fellBack], kernels: interp.kernels };
  } finally {
    interp.close();
  }
}

/** run()'s answer: every output a tensor (a sequence or optional output needs runValues). */
export function tensorsOnly(out: Record<string, OutputValue>): Record<string, OutputTensor> {
  for (const [name, v] of Object.entries(out))
    if (!('data' in v))
      throw new TandemError(
        'TANDEM_ERR_UNSUPPORTED',
        `onnx: output '${name}' is a sequence or an optional; run() answers tensors (use runValues)`,
        { output: name },
      );
  return out as Record<string, OutputTensor>;
}
