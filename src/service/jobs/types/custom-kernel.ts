/**
 * `custom-kernel`: a user's own GPU kernel as a job — CUDA C compiled by NVRTC or WGSL compiled by Dawn —
 * with its tensors (shapes, dtypes, access modes, initial values), its launch geometry and its scalar
 * parameters. The kernel is registered on the runtime under a name derived from its source (so the same
 * kernel is compiled once), submitted like any other task, and the written tensors come back as a summary
 * (first values, sum, min, max). Compile errors come back with the compiler's log (TANDEM_ERR_COMPILE).
 */
import { createHash } from 'node:crypto';
import { type DType, fromNumbers, hostView, bytesPerElement, toNumbers } from '../../../core/dtype.js';
import { TandemError } from '../../../core/errors.js';
import { fillRandom, unitAt } from '../../../core/seeded-random.js';
import type { CudaParam, CudaProgram } from '../../../devices/cuda/kernel-api.js';
import type { WgslCustomKernel } from '../../../devices/webgpu/kernel-api.js';
import type { AccessMode, KernelDef } from '../../../kernels/kernel.js';
import type { Tensor } from '../../../runtime/runtime.js';
import { defineJobType } from '../job-type.js';
import { awaitOrAbort, requireRuntime } from './task-helpers.js';

const DTYPES = ['f32', 'i32', 'u8', 'f64'] as const;
const MAX_ELEMENTS = 1 << 26;
const RETURNED_VALUES = 256;

interface TensorSpec {
  readonly name: string;
  readonly shape: number[];
  readonly dtype: DType;
  readonly mode: AccessMode;
  readonly init: 'random' | 'zeros' | 'ones' | 'range';
}

type ParamSpec =
  { readonly tensor: string } | { readonly type: 'i32' | 'u32' | 'f32'; readonly value: number };

export interface CustomKernelParams {
  readonly language: 'cuda' | 'wgsl';
  readonly source: string;
  readonly entry: string;
  readonly tensors: TensorSpec[];
  readonly params: ParamSpec[];
  readonly grid: [number, number, number];
  readonly block: [number, number, number];
  readonly seed: number;
}

const dim3 = {
  type: 'array',
  items: { type: 'integer', minimum: 1, maximum: 2_147_483_647 },
  minItems: 1,
  maxItems: 3,
};

function bad(msg: string): TandemError {
  return new TandemError('TANDEM_ERR_INVALID_ARGUMENT', `custom-kernel: ${msg}`);
}

function toDim3(v: unknown, what: string): [number, number, number] {
  const a = (Array.isArray(v) ? v : [1]) as number[];
  const d = [a[0] ?? 1, a[1] ?? 1, a[2] ?? 1];
  if (d.some((x) => !Number.isInteger(x) || x < 1)) throw bad(`${what} must be 1 to 3 positive integers`);
  return d as [number, number, number];
}

function parse(raw: Readonly<Record<string, unknown>>): CustomKernelParams {
  const language = raw['language'] as 'cuda' | 'wgsl';
  const tensors = (raw['tensors'] as TensorSpec[]).map((t) => ({
    name: t.name,
    shape: [...t.shape],
    dtype: t.dtype,
    mode: t.mode,
    init: t.init ?? (t.mode === 'w' ? 'zeros' : 'random'),
  }));
  const names = new Set<string>();
  let total = 0;
  for (const t of tensors) {
    if (names.has(t.name)) throw bad(`tensor ${t.name} is named twice`);
    names.add(t.name);
    total += t.shape.reduce((a, b) => a * b, 1);
  }
  if (total > MAX_ELEMENTS)
    throw new TandemError(
      'TANDEM_ERR_LIMIT',
      `custom-kernel: ${total} elements in all, limit ${MAX_ELEMENTS}`,
    );
  if (!tensors.some((t) => t.mode !== 'r')) throw bad('at least one tensor must be written (mode w or rw)');
  const params = (raw['params'] as ParamSpec[] | undefined) ?? [];
  for (const p of params)
    if ('tensor' in p && !names.has(p.tensor)) throw bad(`params name an unknown tensor ${p.tensor}`);
  if (language === 'wgsl' && params.some((p) => 'tensor' in p)) {
    throw bad(
      'WGSL binds tensors in order at @group(0) @binding(i); params hold only scalars (the uniform block)',
    );
  }
  return {
    language,
    source: String(raw['source']),
    entry: String(raw['entry']),
    tensors,
    params,
    grid: toDim3(raw['grid'], 'grid'),
    block: toDim3(raw['block'] ?? [1], 'block'),
    seed: Number(raw['seed'] ?? 1),
  };
}

function initial(t: TensorSpec, seed: number): ArrayLike<number> {
  const n = t.shape.reduce((a, b) => a * b, 1);
  const out = new Float64Array(n);
  if (t.init === 'ones') out.fill(1);
  else if (t.init === 'range') for (let i = 0; i < n; i++) out[i] = i;
  else if (t.init === 'random') {
    // Floats in [-1, 1) and integers in 1..100, never zero (a zero input hides a skipped element).
    if (t.dtype === 'f32' || t.dtype === 'f64') fillRandom(out, seed);
    else for (let i = 0; i < n; i++) out[i] = 1 + Math.floor(unitAt(seed, i) * 100);
  }
  const stored = hostView(t.dtype, new ArrayBuffer(n * bytesPerElement(t.dtype)), 0, n);
  fromNumbers(t.dtype, out, stored);
  return stored;
}

function kernelFor(p: CustomKernelParams): { def: KernelDef; impl: CudaProgram | WgslCustomKernel } {
  const hash = createHash('sha256')
    .update(
      JSON.stringify([
        p.language,
        p.source,
        p.entry,
        p.tensors.map((t) => [t.name, t.mode]),
        p.params,
        p.grid,
        p.block,
      ]),
    )
    .digest('hex')
    .slice(0, 16);
  const def: KernelDef = {
    name: `custom.${hash}`,
    args: p.tensors.map((t) => ({ name: t.name, mode: t.mode })),
    validate: () => undefined, // shapes were fixed by the job's own parameters
    cost: (args) => ({ flops: 0, bytes: Object.values(args).reduce((a, d) => a + d.bytes, 0) }),
  };
  if (p.language === 'cuda') {
    const index = new Map(p.tensors.map((t, i) => [t.name, i]));
    const params: CudaParam[] = p.params.map((x) =>
      'tensor' in x ? { kind: 'ptr', arg: index.get(x.tensor)! } : { kind: x.type, value: x.value },
    );
    return {
      def,
      impl: {
        kind: 'program',
        source: p.source,
        entry: p.entry,
        prelude: false,
        grid: () => p.grid,
        block: () => p.block,
        params: () => params,
      },
    };
  }
  const uniforms = p.params.map((x, i) => ({
    name: `p${i}`,
    type: (x as { type: 'i32' | 'u32' | 'f32' }).type,
  }));
  return {
    def,
    impl: { wgsl: p.source, entry: p.entry, workgroups: p.grid, ...(uniforms.length ? { uniforms } : {}) },
  };
}

function summary(dtype: DType, data: ArrayLike<number>): Record<string, unknown> {
  const v = toNumbers(dtype, data as Parameters<typeof toNumbers>[1]);
  let sum = 0;
  let min = Infinity;
  let max = -Infinity;
  for (const x of v) {
    sum += x;
    if (x < min) min = x;
    if (x > max) max = x;
  }
  return { sum, min, max, first: Array.from(v.subarray(0, RETURNED_VALUES)) };
}

export const customKernelJob = defineJobType<CustomKernelParams>({
  name: 'custom-kernel',
  description:
    'Your own kernel: CUDA C (NVRTC) or WGSL (Dawn), with its tensors, geometry and scalar parameters.',
  paramsSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['language', 'source', 'entry', 'tensors', 'grid'],
    properties: {
      language: { type: 'string', enum: ['cuda', 'wgsl'] },
      source: { type: 'string', minLength: 1, maxLength: 262_144 },
      entry: { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]{0,127}$' },
      tensors: {
        type: 'array',
        minItems: 1,
        maxItems: 16,
        items: {
          type: 'object',
          additionalProperties: false,
          required: ['name', 'shape', 'dtype', 'mode'],
          properties: {
            name: { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]{0,31}$' },
            shape: {
              type: 'array',
              minItems: 1,
              maxItems: 4,
              items: { type: 'integer', minimum: 1, maximum: MAX_ELEMENTS },
            },
            dtype: { type: 'string', enum: [...DTYPES] },
            mode: { type: 'string', enum: ['r', 'w', 'rw'] },
            init: { type: 'string', enum: ['random', 'zeros', 'ones', 'range'] },
          },
        },
      },
      params: {
        type: 'array',
        maxItems: 32,
        items: {
          oneOf: [
            {
              type: 'object',
              additionalProperties: false,
              required: ['tensor'],
              properties: { tensor: { type: 'string' } },
            },
            {
              type: 'object',
              additionalProperties: false,
              required: ['type', 'value'],
              properties: {
                type: { type: 'string', enum: ['i32', 'u32', 'f32'] },
                value: { type: 'number' },
              },
            },
          ],
        },
      },
      grid: dim3,
      block: dim3,
      seed: { type: 'integer', minimum: 0, maximum: 4_294_967_295 },
    },
  },
  parse,
  memoryBytes: (p) =>
    p.tensors.reduce((a, t) => a + t.shape.reduce((x, y) => x * y, 1) * bytesPerElement(t.dtype), 0),
  jobClass: () => 'custom',
  // Short: a kernel that does not end is stopped by the deadline watchdog (a relaunch), so soon is better.
  defaultTimeoutSeconds: 60,
  requestedDevice: (p) => (p.language === 'cuda' ? 'cuda' : 'webgpu'),
  async run(ctx) {
    const rt = requireRuntime(ctx);
    const p = ctx.params;
    const device = p.language === 'cuda' ? 'cuda' : 'webgpu';
    if (!rt.devices.some((d) => d.info.kind === device)) {
      const why = rt.backends.find((b) => b.kind === device)?.reason ?? 'not configured';
      throw new TandemError(
        'TANDEM_ERR_NO_DEVICE',
        `custom-kernel: a ${p.language} kernel needs a ${device} device: ${why}`,
      );
    }
    const { def, impl } = kernelFor(p);
    rt.registerKernel(def, { [device]: impl });
    const tensors: Tensor[] = p.tensors.map((t, i) =>
      rt.tensor(t.shape, t.dtype, t.mode === 'w' && t.init === 'zeros' ? undefined : initial(t, p.seed + i)),
    );
    try {
      const scalars = Object.fromEntries(
        p.params.flatMap((x, i) => ('type' in x ? [[`p${i}`, x.value]] : [])),
      );
      const task = rt.submit({
        kernel: def.name,
        args: Object.fromEntries(p.tensors.map((t, i) => [t.name, tensors[i]!])),
        scalars,
        device,
        tags: ctx.tags,
        name: `${p.language}:${p.entry}`,
      });
      await awaitOrAbort(
        task.done,
        ctx.signal,
        task.done.catch(() => undefined),
      );
      ctx.progress(0.9, 'reading results');
      const outputs: Record<string, unknown> = {};
      for (let i = 0; i < p.tensors.length; i++) {
        const t = p.tensors[i]!;
        if (t.mode === 'r') continue;
        outputs[t.name] = { shape: t.shape, dtype: t.dtype, ...summary(t.dtype, await rt.read(tensors[i]!)) };
      }
      return { kernel: def.name, language: p.language, entry: p.entry, device: task.deviceId, outputs };
    } finally {
      for (const t of tensors) rt.free(t);
    }
  },
});
