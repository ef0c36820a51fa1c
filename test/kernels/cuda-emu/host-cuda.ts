/**
 * Runs a CUDA native kernel (src/kernels/<op>/cuda.ts) on the host: a fake CudaKernelContext whose
 * `launch` assembles each program exactly as the CUDA backend does (prelude, defines, source), swaps the
 * inline-PTX helpers (f16 conversions, mma.sync, ldmatrix) for the emulations in emu.h, compiles it
 * with g++ and runs the grid block by block with one thread per CUDA thread. Slow, but it executes the
 * real kernel text with its real launch geometry and parameters on a machine without a GPU.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Scalars, TensorDesc } from '../../../src/devices/device.js';
import type {
  CudaArg,
  CudaGemmRequest,
  CudaKernelContext,
  CudaNative,
  CudaProgram,
} from '../../../src/devices/cuda/kernel-api.js';
import { defineLines, prelude } from '../../../src/devices/cuda/prelude.js';

// dist/test/kernels/cuda-emu → the source tree's test/kernels/cuda-emu/emu.h
const EMU_H = fileURLToPath(new URL('../../../../test/kernels/cuda-emu/emu.h', import.meta.url));

/** Why the emulator cannot run here (no g++ with C++20), or null. */
export function hostCudaUnavailable(): string | null {
  if (!existsSync(EMU_H)) return `emu.h not found at ${EMU_H}`;
  const r = spawnSync('g++', ['--version'], { encoding: 'utf8' });
  return r.status === 0 ? null : 'g++ is not installed';
}

const workDir = mkdtempSync(join(tmpdir(), 'tandem-cuda-emu-'));

function hostSource(program: CudaProgram, args: readonly CudaArg[], scalars: Scalars): string {
  const dtypes = program.dtypes?.(args, scalars) ?? {};
  const defines = program.defines?.(args, scalars) ?? {};
  const pre = prelude(dtypes)
    .replace(
      /static __device__ __forceinline__ float tdm_h2f.*\n/,
      'static inline float tdm_h2f(tdm_u16 h) { return emu_h2f(h); }\n',
    )
    .replace(
      /static __device__ __forceinline__ tdm_u16 tdm_f2h.*\n/,
      'static inline tdm_u16 tdm_f2h(float f) { return emu_f2h(f); }\n',
    );
  let src = program.source;
  // The inline-PTX helpers sit together from mma() to lds32(); emu.h defines host versions of them.
  const from = src.indexOf('static __device__ __forceinline__ void mma(');
  if (from >= 0)
    src = src.slice(0, from) + src.slice(src.indexOf('static __device__ __forceinline__ unsigned lds32('));
  // Dynamic shared memory becomes a static array (blocks run one at a time, as for __shared__).
  src = src.replace(/extern __shared__ (\w+) (\w+)\[\];/g, 'static $1 $2[1 << 16];');
  const emu = 'IS_BF16' in defines ? `#define IS_BF16_EMU ${defines['IS_BF16']}\n` : '';
  return `${emu}#include "${EMU_H}"\n${pre}${defineLines(defines)}${src}`;
}

function runProgram(
  program: CudaProgram,
  args: readonly CudaArg[],
  scalars: Scalars,
  buffers: Map<number, Uint8Array>,
): void {
  const grid = program.grid(args, scalars);
  const block = program.block(args, scalars);
  const ptrs = [...buffers.keys()];
  const call = program.params(args, scalars).map((p) => {
    switch (p.kind) {
      case 'ptr':
        return `AnyPtr{buf[${ptrs.indexOf(args[p.arg]!.ptr)}].data()}`;
      case 'addr':
        return `AnyPtr{buf[${ptrs.indexOf(p.value)}].data()}`;
      case 'f32':
        return `(float)${floatLiteral(p.value)}`;
      case 'f64':
        return `(double)${floatLiteral(p.value)}`;
      default:
        return `${p.value}`;
    }
  });
  const file = (i: number): string => join(workDir, `b${i}.bin`);
  const main = `
struct AnyPtr { void* p; template <class T> operator T*() const { return (T*)p; } };
int main() {
  std::vector<std::vector<unsigned char>> buf;
${ptrs.map((p, i) => `  buf.push_back(emu_read<unsigned char>("${file(i)}", ${buffers.get(p)!.length}));`).join('\n')}
  emu_launch({${grid[0]}, ${grid[1]}, 1}, {${block[0]}, ${block[1] ?? 1}, 1}, [&] { ${program.entry}(${call.join(', ')}); });
${ptrs.map((_p, i) => `  emu_write("${file(i)}", buf[${i}]);`).join('\n')}
  return 0;
}`;
  const code = hostSource(program, args, scalars) + main;
  const exe = join(workDir, `k_${createHash('sha256').update(code).digest('hex').slice(0, 16)}`);
  if (!existsSync(exe)) {
    writeFileSync(`${exe}.cpp`, code);
    const c = spawnSync(
      'g++',
      ['-std=c++20', '-O1', '-fno-strict-aliasing', '-pthread', '-w', '-o', exe, `${exe}.cpp`],
      {
        encoding: 'utf8',
      },
    );
    if (c.status !== 0) throw new Error(`g++ ${program.entry}: ${c.stderr.slice(0, 4000)}`);
  }
  ptrs.forEach((p, i) => writeFileSync(file(i), buffers.get(p)!));
  const r = spawnSync(exe, [], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${program.entry} failed: ${r.stderr}`);
  ptrs.forEach((p, i) => buffers.get(p)!.set(readFileSync(file(i))));
}

/** The buffer holding device address `addr` and the byte offset into it. */
function locate(addr: number, buffers: Map<number, Uint8Array>): { buf: Uint8Array; offset: number } {
  for (const [base, buf] of buffers) {
    if (addr >= base && addr < base + Math.max(buf.length, 1)) return { buf, offset: addr - base };
  }
  throw new Error(`no emulated buffer holds address ${addr}`);
}

/** A C++ literal for a double parameter (JavaScript prints infinities as words). */
function floatLiteral(v: number): string {
  if (v === Infinity) return 'HUGE_VAL';
  if (v === -Infinity) return '(-HUGE_VAL)';
  return Number.isNaN(v) ? 'NAN' : String(v);
}

/** cuBLAS's row-major GEMM as ctx.gemm promises it (f32/f64; float64 sums, one rounding on store). */
function hostGemm(req: CudaGemmRequest, buffers: Map<number, Uint8Array>): void {
  if (req.dtype !== 'f32' && req.dtype !== 'f64') throw new Error(`gemm ${req.dtype} is not emulated`);
  const { m, n, k, transA, transB, alpha, beta } = req;
  const view = (addr: number, count: number): Float32Array | Float64Array => {
    const { buf, offset } = locate(addr, buffers);
    const at = buf.byteOffset + offset;
    return req.dtype === 'f64'
      ? new Float64Array(buf.buffer, at, count)
      : new Float32Array(buf.buffer, at, count);
  };
  const a = view(req.a, m * k);
  const b = view(req.b, k * n);
  const c = view(req.c, m * n);
  for (let i = 0; i < m; i++) {
    for (let j = 0; j < n; j++) {
      let sum = 0;
      for (let q = 0; q < k; q++)
        sum += a[transA ? q * m + i : i * k + q]! * b[transB ? j * k + q : q * n + j]!;
      c[i * n + j] = alpha * sum + (beta === 0 ? 0 : beta * c[i * n + j]!);
    }
  }
}

/**
 * Runs `native` on tensors with the given descriptions and initial bytes; returns every tensor's bytes
 * afterwards and the entries (and programs) launched, in order. Fake device addresses are 1 MiB apart (16-byte aligned).
 */
export function runNativeOnHost(
  native: CudaNative,
  descs: readonly TensorDesc[],
  initial: readonly Uint8Array[],
  scalars: Scalars,
): { outputs: Uint8Array[]; entries: string[]; programs: CudaProgram[] } {
  const buffers = new Map<number, Uint8Array>();
  const args: CudaArg[] = descs.map((desc, i) => {
    const ptr = (i + 1) * (1 << 20);
    buffers.set(ptr, Uint8Array.from(initial[i]!));
    return { ptr, desc };
  });
  let next = 1 << 30;
  const entries: string[] = [];
  const programs: CudaProgram[] = [];
  const ctx: CudaKernelContext = {
    arch: 'sm_90',
    smCount: 132,
    scratch(bytes) {
      const p = next;
      next += Math.ceil(bytes / (1 << 20) + 1) * (1 << 20);
      buffers.set(p, new Uint8Array(bytes).fill(0xff)); // NaN-ish garbage, as fresh device memory may hold
      return p;
    },
    launch(program, a, s) {
      runProgram(program, a as CudaArg[], s, buffers);
      entries.push(program.entry);
      programs.push(program);
    },
    gemm(req) {
      hostGemm(req, buffers);
    },
    // cuBLASLt without an epilogue (a strided batch of GEMMs, strides in elements); it may decline others.
    matmul(req) {
      if (req.epilogue !== 'none') return false;
      const size = req.dtype === 'f64' ? 8 : 4;
      const b = req.batch ?? { count: 1, strideA: 0, strideB: 0, strideC: 0 };
      for (let j = 0; j < b.count; j++) {
        hostGemm(
          {
            ...req,
            precision: 'default',
            a: req.a + j * b.strideA * size,
            b: req.b + j * b.strideB * size,
            c: req.c + j * b.strideC * size,
          },
          buffers,
        );
      }
      return true;
    },
    memcpy() {
      throw new Error('memcpy is not emulated');
    },
    tile() {
      throw new Error('tile ops are not emulated');
    },
  };
  native.run(ctx, args, scalars);
  return { outputs: args.map((a) => buffers.get(a.ptr)!), entries, programs };
}
