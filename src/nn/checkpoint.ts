/**
 * Training checkpoints as safetensors files: the model's parameters under their dotted names (what
 * PyTorch's state_dict uses, so either side loads the other's weights), the optimizer's moments and
 * master weights as `optim.<name>.exp_avg | exp_avg_sq | master`, and in the metadata the step, the
 * data position, the loss scale and the spec, so a resumed run continues exactly (the same next loss).
 * Files are `step-00000123.safetensors` in a directory, written under another name and renamed.
 */
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { type DType, type HostArray, fromNumbers, hostView, toNumbers } from '../core/dtype.js';
import { TandemError } from '../core/errors.js';
import { shapeStr } from '../core/shape.js';
import type { Tensor } from '../memory/tensor.js';
import type { Runtime } from '../runtime/runtime.js';
import type { Module } from './modules/module.js';
import {
  hostArrayOf,
  loadSafetensors,
  saveSafetensors,
  tandemDType,
  type LoadedTensor,
  type TensorToSave,
} from './safetensors.js';
import type { Trainer } from './train.js';

const FORMAT = 'tandem-train/1';
const FILE = /^step-(\d{8,})\.safetensors$/;
/** Checkpoints kept in a directory (older ones are removed after a new one is written). */
const KEEP = 2;

function bad(message: string, details: Record<string, unknown> = {}): TandemError {
  return new TandemError('TANDEM_ERR_BAD_CHECKPOINT', message, details);
}

export function checkpointFile(dir: string, step: number): string {
  return join(dir, `step-${String(step).padStart(8, '0')}.safetensors`);
}

/**
 * Creates the checkpoint directory (and its parents) or says why it cannot: called before a run starts,
 * so a path that is a file, or not writable, is refused at once rather than after the training it was
 * to keep (TANDEM_ERR_INVALID_ARGUMENT naming the path and the system's reason).
 */
export function prepareCheckpointDir(dir: string): void {
  try {
    mkdirSync(dir, { recursive: true });
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? '';
    const why =
      code === 'EEXIST' || code === 'ENOTDIR'
        ? 'a file (not a directory) is in the way'
        : code === 'EACCES' || code === 'EPERM' || code === 'EROFS'
          ? 'it is not writable'
          : (e as Error).message;
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      `checkpoint directory ${dir} cannot be created: ${why}`,
      {
        dir,
        ...(code ? { errno: code } : {}),
      },
      { cause: e },
    );
  }
}

/** The newest checkpoint file in `dir`, or null. */
export function latestCheckpoint(dir: string): string | null {
  let best: [number, string] | null = null;
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return null;
  }
  for (const n of names) {
    const m = FILE.exec(n);
    if (m && (best === null || Number(m[1]) > best[0])) best = [Number(m[1]), n];
  }
  return best === null ? null : join(dir, best[1]);
}

async function snapshot(rt: Runtime, t: Tensor): Promise<TensorToSave> {
  return { dtype: t.dtype, shape: t.shape, data: await rt.read(t) };
}

/** Values of `loaded` in `dtype` (converted when the file holds another float type). */
function valuesFor(loaded: LoadedTensor, dtype: DType, name: string): HostArray {
  const from = tandemDType(loaded.dtype);
  if (from === undefined)
    throw bad(`checkpoint tensor ${name} has dtype ${loaded.dtype}, which no parameter can take`);
  const data = hostArrayOf(loaded);
  if (from === dtype) return data;
  const out = hostView(
    dtype,
    new ArrayBuffer(data.length * (dtype === 'f64' ? 8 : dtype === 'f32' ? 4 : 2)),
    0,
    data.length,
  );
  fromNumbers(dtype, toNumbers(from, data), out);
  return out;
}

async function restore(
  rt: Runtime,
  t: Tensor,
  loaded: LoadedTensor | undefined,
  name: string,
): Promise<void> {
  if (loaded === undefined) throw bad(`the checkpoint has no tensor ${name}`, { tensor: name });
  if (loaded.shape.length !== t.shape.length || loaded.shape.some((d, i) => d !== t.shape[i]))
    throw bad(`checkpoint tensor ${name} is ${shapeStr(loaded.shape)}, the model's is ${shapeStr(t.shape)}`, {
      tensor: name,
    });
  await rt.write(t, valuesFor(loaded, t.dtype, name));
}

/** Writes a model's parameters (only) as safetensors: a file PyTorch's `load_file` reads as a state_dict. */
export async function saveParameters(model: Module, rt: Runtime, path: string): Promise<{ bytes: number }> {
  const tensors = new Map<string, TensorToSave>();
  for (const [name, p] of model.namedParameters()) tensors.set(name, await snapshot(rt, p.data));
  return saveSafetensors(path, tensors);
}

/** Loads parameters by name from a safetensors file (e.g. PyTorch's state_dict), converting dtypes. */
export async function loadParameters(
  model: Module & { readonly nn: { readonly rt: Runtime } },
  path: string,
): Promise<void> {
  const file = await loadSafetensors(path);
  for (const [name, p] of model.namedParameters())
    await restore(model.nn.rt, p.data, file.tensors.get(name), name);
}

/** Saves weights, optimizer state and position after `step` steps into `dir`; returns the file. */
export async function saveCheckpoint(trainer: Trainer, dir: string, step: number): Promise<string> {
  const rt = trainer.rt;
  await trainer.syncState(); // fp16: the loss scale and the steps really taken live on the device
  const tensors = new Map<string, TensorToSave>();
  for (const [name, p] of trainer.built.model.namedParameters()) {
    tensors.set(name, await snapshot(rt, p.data));
    const s = trainer.optimizer.stateTensors(p);
    tensors.set(`optim.${name}.exp_avg`, await snapshot(rt, s.m));
    tensors.set(`optim.${name}.exp_avg_sq`, await snapshot(rt, s.v));
    if (s.master !== null) tensors.set(`optim.${name}.master`, await snapshot(rt, s.master));
  }
  prepareCheckpointDir(dir);
  const path = checkpointFile(dir, step);
  await saveSafetensors(path, tensors, {
    durable: true,
    metadata: {
      format: FORMAT,
      step: String(step),
      optimizerSteps: String(trainer.optimizer.steps),
      dataPosition: String(trainer.dataPosition),
      lossScale: JSON.stringify(trainer.scalerState()),
      spec: JSON.stringify(trainer.spec),
    },
  });
  const old = readdirSync(dir)
    .filter((n) => FILE.test(n))
    .sort()
    .slice(0, -KEEP);
  for (const n of old) rmSync(join(dir, n), { force: true });
  return path;
}

/** A JSON metadata entry of a checkpoint; a damaged one is BAD_CHECKPOINT, not a SyntaxError. */
function metaJson(
  path: string,
  meta: Readonly<Record<string, string>>,
  key: string,
  fallback: unknown,
): unknown {
  const raw = meta[key];
  if (raw === undefined) return fallback;
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    throw bad(`${path}: metadata ${key} is not valid JSON`, { key });
  }
}

/** Restores a checkpoint into a trainer built from a compatible spec; returns the steps it had done. */
export async function loadCheckpoint(trainer: Trainer, path: string): Promise<number> {
  const file = await loadSafetensors(path);
  const meta = file.metadata;
  if (meta['format'] !== FORMAT)
    throw bad(`${path} is not a Tandem training checkpoint (format ${meta['format'] ?? 'missing'})`);
  const spec = metaJson(path, meta, 'spec', {}) as Partial<Trainer['spec']>;
  for (const k of ['model', 'preset', 'precision'] as const)
    if ((spec[k] ?? null) !== (trainer.spec[k] ?? null))
      throw bad(`${path} was written for ${k} ${String(spec[k])}, this run uses ${String(trainer.spec[k])}`);
  const rt = trainer.rt;
  for (const [name, p] of trainer.built.model.namedParameters()) {
    await restore(rt, p.data, file.tensors.get(name), name);
    const s = trainer.optimizer.stateTensors(p);
    await restore(rt, s.m, file.tensors.get(`optim.${name}.exp_avg`), `optim.${name}.exp_avg`);
    await restore(rt, s.v, file.tensors.get(`optim.${name}.exp_avg_sq`), `optim.${name}.exp_avg_sq`);
    if (s.master !== null)
      await restore(rt, s.master, file.tensors.get(`optim.${name}.master`), `optim.${name}.master`);
  }
  const step = Number(meta['step']);
  if (!Number.isInteger(step) || step < 0)
    throw bad(`${path}: metadata step ${meta['step']} is not a step count`);
  trainer.optimizer.steps = Number(meta['optimizerSteps'] ?? step);
  trainer.seekData(Number(meta['dataPosition'] ?? step));
  trainer.restoreScaler(metaJson(path, meta, 'lossScale', null));
  trainer.stepsDone = step;
  return step;
}
