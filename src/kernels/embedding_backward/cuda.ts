/**
 * embedding_backward on CUDA.
 * - dwpe: one thread per (t, c) sums dy[b, t, c] over b in order (deterministic), positions ≥ T get 0
 *   (or keep their value with accumulate).
 * - dwte: atomicAdd of dy rows into their table rows in A_t (f32; f64 for f64). For f32/f64 the adds go
 *   into dwte itself (zeroed first unless accumulating); for f16/bf16 into an f32 copy in scratch memory
 *   (V·C·4 bytes, loaded from dwte when accumulating) rounded into dwte once at the end, so no partial
 *   sum is ever rounded to 16 bits. The order of the atomic adds varies between runs: dwte is correct to
 *   f32 rounding but not bitwise reproducible when an id repeats.
 */
import { numel } from '../../core/shape.js';
import type { Scalars } from '../../devices/device.js';
import type { CudaArgDesc, CudaNative, CudaParam, CudaProgram } from '../../devices/cuda/kernel-api.js';
import { BLOCK_DIM, GRID_STRIDE, elementwiseGrid } from '../common/cuda.js';
import { accumulateScalar } from '../common/norm-checks.js';
import { isHalf } from '../common/cpu-float.js';

const SOURCE = `
extern "C" __global__ void tdm_emb_dwpe(const X_t* __restrict__ dy, X_t* __restrict__ dwpe, long long n,
    int C, int T, int B, int accumulate) {
  ${GRID_STRIDE} {
    const long long t = i / C;
    const int c = (int)(i - t * C);
    X_c s = accumulate ? ldX(dwpe, i) : (X_c)0;
    if (t < T) for (int b = 0; b < B; b++) s += ldX(dy, ((long long)b * T + t) * C + c);
    stX(dwpe, i, s);
  }
}
// acc may be dwte itself (f32/f64, load = 0): no __restrict__.
extern "C" __global__ void tdm_emb_init(const X_t* src, A_t* acc, long long n, int load) {
  ${GRID_STRIDE} acc[i] = load ? (A_t)ldX(src, i) : (A_t)0;
}
extern "C" __global__ void tdm_emb_scatter(const int* __restrict__ ids, const X_t* __restrict__ dy, A_t* acc,
    long long n, int C, int V) {
  ${GRID_STRIDE} {
    const long long row = i / C;
    const int c = (int)(i - row * C);
    const int id = ids[row];
    if (id >= 0 && id < V) atomicAdd(&acc[(long long)id * C + c], (A_t)ldX(dy, i));
  }
}
extern "C" __global__ void tdm_emb_store(const A_t* __restrict__ acc, X_t* __restrict__ dwte, long long n) {
  ${GRID_STRIDE} stX(dwte, i, acc[i]);
}
`;

interface EmbLaunch {
  readonly n: number;
  readonly cols: number;
  readonly steps: number;
  readonly batch: number;
  readonly vocab: number;
  readonly accumulate: number;
  /** The f32 copy of dwte in scratch memory (16-bit tables), 0 when the adds go into dwte itself. */
  readonly accAddr: number;
  readonly load: number;
}
const L = (s: Scalars): EmbLaunch => s as unknown as EmbLaunch;
const accParam = (s: Scalars): CudaParam =>
  L(s).accAddr === 0 ? { kind: 'ptr', arg: 2 } : { kind: 'addr', value: L(s).accAddr };

function program(entry: string, params: CudaProgram['params']): CudaProgram {
  return {
    kind: 'program',
    source: SOURCE,
    entry,
    dtypes: (args: readonly CudaArgDesc[]) => ({
      X: args[1]!.desc.dtype,
      A: args[1]!.desc.dtype === 'f64' ? 'f64' : 'f32',
    }),
    grid: (_a, s) => elementwiseGrid(L(s).n),
    block: () => BLOCK_DIM,
    params,
  };
}

const DWPE = program('tdm_emb_dwpe', (_a, s) => [
  { kind: 'ptr', arg: 1 },
  { kind: 'ptr', arg: 3 },
  { kind: 'i64', value: L(s).n },
  { kind: 'i32', value: L(s).cols },
  { kind: 'i32', value: L(s).steps },
  { kind: 'i32', value: L(s).batch },
  { kind: 'i32', value: L(s).accumulate },
]);
const INIT = program('tdm_emb_init', (_a, s) => [
  { kind: 'ptr', arg: 2 },
  accParam(s),
  { kind: 'i64', value: L(s).n },
  { kind: 'i32', value: L(s).load },
]);
const SCATTER = program('tdm_emb_scatter', (_a, s) => [
  { kind: 'ptr', arg: 0 },
  { kind: 'ptr', arg: 1 },
  accParam(s),
  { kind: 'i64', value: L(s).n },
  { kind: 'i32', value: L(s).cols },
  { kind: 'i32', value: L(s).vocab },
]);
const STORE = program('tdm_emb_store', (_a, s) => [
  { kind: 'addr', value: L(s).accAddr },
  { kind: 'ptr', arg: 2 },
  { kind: 'i64', value: L(s).n },
]);

export const embeddingBackwardCuda: CudaNative = {
  kind: 'native',
  run(ctx, args, scalars) {
    const [ids, , dwte, dwpe] = args;
    const [batch, steps] = ids!.desc.shape as [number, number];
    const [vocab, cols] = dwte!.desc.shape as [number, number];
    const accumulate = accumulateScalar('embedding_backward', scalars);
    const half = isHalf(dwte!.desc.dtype);
    const tableN = vocab * cols;
    const base = { cols, steps, batch, vocab, accumulate: accumulate ? 1 : 0 };
    const launch = (p: CudaProgram, l: EmbLaunch): void => ctx.launch(p, args, l as unknown as Scalars);
    launch(DWPE, { ...base, n: numel(dwpe!.desc.shape), accAddr: 0, load: 0 });
    const accAddr = half ? ctx.scratch(tableN * 4) : 0;
    const table = { ...base, n: tableN, accAddr, load: accumulate ? 1 : 0 };
    if (half || !accumulate) launch(INIT, table);
    launch(SCATTER, { ...table, n: batch * steps * cols });
    if (half) launch(STORE, table);
  },
};
