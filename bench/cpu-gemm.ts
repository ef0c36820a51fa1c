/**
 * CPU GEMM engines side by side in one process, f32, one thread each: the WebAssembly SIMD engine
 * (operands copied in, and in place inside the wasm memory), the plain TypeScript reference engine and
 * OpenBLAS (pinned to 1 thread for the per-thread ratio, then with its default threads).
 *
 *   npx tsc -p . && npm run build:wasm && node dist/bench/cpu-gemm.js [--n 512] [--reps 30] [--threads 2]
 *
 * Then the wasm engine runs in `--threads` worker threads at once (default: all cores), each on its
 * own matrices, as the CPU pool would run it: the per-thread rate when every core is busy.
 *
 * Prints the best and median GFLOP/s of each and the ratios of the best runs: on these shared 2-core
 * machines other work inflates medians, and the best of many runs is the stable figure.
 */
import { availableParallelism } from 'node:os';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { intOption, parse } from '../src/cli/output.js';
import { loadOpenBlas } from '../src/devices/cpu/openblas.js';
import { gemmTs } from '../src/kernels/gemm/ts-engine.js';
import { loadWasmGemm } from '../src/devices/cpu/wasm/gemm-wasm.js';
import { seededRandom } from '../src/core/seeded-random.js';

const { values } = parse(process.argv.slice(2), {
  n: { type: 'string' },
  reps: { type: 'string' },
  threads: { type: 'string' },
});

const n = intOption(values['n'], 'n', 512, 1, 1 << 14);
const reps = intOption(values['reps'], 'reps', 30);
const flops = 2 * n ** 3;

function sharedF32(count: number): Float32Array {
  return new Float32Array(new SharedArrayBuffer(4 * count));
}

function randomize(x: Float32Array, seed: number): void {
  const rnd = seededRandom(seed);
  for (let i = 0; i < x.length; i++) x[i] = rnd() * 2 - 1;
}

interface Timing {
  readonly best: number;
  readonly median: number;
}

/** Seconds over `reps` runs after `warm` unmeasured ones (wasm tiers up from Liftoff to TurboFan). */
function time(run: () => void, warm = 3): Timing {
  for (let i = 0; i < warm; i++) run();
  const t: number[] = [];
  for (let i = 0; i < reps; i++) {
    const t0 = performance.now();
    run();
    t.push((performance.now() - t0) / 1e3);
  }
  t.sort((x, y) => x - y);
  return { best: t[0]!, median: t[Math.floor(t.length / 2)]! };
}

function maxRelDiff(x: Float32Array, y: Float32Array): number {
  let worst = 0;
  let scale = 0;
  for (let i = 0; i < x.length; i++) scale = Math.max(scale, Math.abs(y[i]!));
  for (let i = 0; i < x.length; i++) worst = Math.max(worst, Math.abs(x[i]! - y[i]!));
  return worst / scale;
}

function sideBySide(): void {
  const a = sharedF32(n * n);
  const b = sharedF32(n * n);
  randomize(a, 1);
  randomize(b, 2);
  const rows: { engine: string; seconds: Timing; check: string }[] = [];
  const want = sharedF32(n * n);
  gemmTs({ m: n, n, k: n, alpha: 1, beta: 0, transA: false, transB: false }, a, b, want);

  function record(engine: string, c: Float32Array, run: () => void): Timing {
    c.fill(NaN);
    const seconds = time(run);
    rows.push({ engine, seconds, check: `max rel diff vs ts ${maxRelDiff(c, want).toExponential(1)}` });
    return seconds;
  }

  const tsSeconds = record('ts (reference engine)', sharedF32(n * n), () => {
    const c = sharedF32(n * n);
    gemmTs({ m: n, n, k: n, alpha: 1, beta: 0, transA: false, transB: false }, a, b, c);
  });
  // (the ts row times a fresh C per run; the result check above already used `want`)
  rows[rows.length - 1] = { ...rows[rows.length - 1]!, check: 'reference' };

  const wasm = loadWasmGemm();
  let wasmCopySeconds: Timing | null = null;
  let wasmColdSeconds = NaN;
  if (wasm.gemm === null) {
    console.log(`wasm engine unavailable: ${wasm.reason}`);
  } else {
    const g = wasm.gemm;
    const c = sharedF32(n * n);
    const t0 = performance.now();
    g.sgemm(false, false, n, n, n, 1, a, n, b, n, 0, c, n);
    wasmColdSeconds = (performance.now() - t0) / 1e3;
    wasmCopySeconds = record('wasm simd (copy in/out)', c, () =>
      g.sgemm(false, false, n, n, n, 1, a, n, b, n, 0, c, n),
    );
    // In place: operands allocated inside the wasm memory, after the workspace.
    const base = g.dataOffset;
    g.ensureBytes(base + 3 * 4 * n * n);
    const heap = g.memory.buffer;
    const ai = new Float32Array(heap, base, n * n);
    const bi = new Float32Array(heap, base + 4 * n * n, n * n);
    const ci = new Float32Array(heap, base + 8 * n * n, n * n);
    ai.set(a);
    bi.set(b);
    record('wasm simd (in place)', ci, () =>
      g.sgemmInPlace(false, false, n, n, n, 1, ai, n, bi, n, 0, ci, n),
    );
  }

  const blas = loadOpenBlas();
  let blas1Seconds: Timing | null = null;
  if (blas.blas === null) {
    console.log(`OpenBLAS unavailable: ${blas.reason}`);
  } else {
    const ob = blas.blas;
    const threads = ob.getThreads();
    const c = sharedF32(n * n);
    ob.setThreads(1);
    blas1Seconds = record('openblas, 1 thread', c, () =>
      ob.sgemm(false, false, n, n, n, 1, a, n, b, n, 0, c, n),
    );
    ob.setThreads(threads);
    record(`openblas, ${threads} threads`, c, () => ob.sgemm(false, false, n, n, n, 1, a, n, b, n, 0, c, n));
  }

  const gflops = (seconds: number): string => (flops / seconds / 1e9).toFixed(2).padStart(8);
  console.log(`CPU GEMM f32 n=${n}, ${reps} runs after 3 warm-up runs, one thread unless stated (GFLOP/s)`);
  console.log(`  ${'engine'.padEnd(26)} ${'best'.padStart(8)} ${'median'.padStart(8)}`);
  for (const r of rows) {
    console.log(`  ${r.engine.padEnd(26)} ${gflops(r.seconds.best)} ${gflops(r.seconds.median)}  ${r.check}`);
  }
  const inPlace = rows.find((r) => r.engine === 'wasm simd (in place)');
  if (inPlace && wasmCopySeconds) {
    const copy = wasmCopySeconds;
    console.log(
      `  wasm first call in this process (before tier-up): ${gflops(wasmColdSeconds).trim()} GFLOP/s`,
    );
    console.log(`  wasm / ts (best):                  ${(tsSeconds.best / copy.best).toFixed(2)}x`);
    if (blas1Seconds)
      console.log(`  wasm / openblas 1 thread (best):   ${(blas1Seconds.best / copy.best).toFixed(3)}x`);
    console.log(
      `  copy in/out cost (best):           ${((copy.best / inPlace.seconds.best - 1) * 100).toFixed(1)}% of in-place time`,
    );
  }
}

/** Worker side: `reps` wasm GEMMs on private matrices after 3 warm-ups; reports its best seconds. */
function wasmWorker(): void {
  const g = loadWasmGemm().gemm;
  if (g === null) throw new Error('wasm engine unavailable in worker');
  const [x, y, z] = [sharedF32(n * n), sharedF32(n * n), sharedF32(n * n)];
  randomize(x, 3);
  randomize(y, 4);
  const t = time(() => g.sgemm(false, false, n, n, n, 1, x, n, y, n, 0, z, n));
  parentPort!.postMessage(t);
}

async function concurrentWasm(threads: number): Promise<void> {
  const url = new URL(import.meta.url);
  const results = await Promise.all(
    Array.from(
      { length: threads },
      () =>
        new Promise<Timing>((resolve, reject) => {
          const w = new Worker(url, { workerData: 'wasm', argv: process.argv.slice(2) });
          w.once('message', (t: Timing) => resolve(t));
          w.once('error', reject);
        }),
    ),
  );
  const per = results.map((t) => (flops / t.best / 1e9).toFixed(2)).join(', ');
  const medians = results.map((t) => (flops / t.median / 1e9).toFixed(2)).join(', ');
  console.log(
    `  wasm simd in ${threads} worker threads at once: best ${per} GFLOP/s per thread (medians ${medians})`,
  );
}

/** f64: the wasm engine's f64x2 kernel beside the TS engine and OpenBLAS dgemm on one thread. */
function float64Rows(): void {
  const [x, y, z] = [new Float64Array(n * n), new Float64Array(n * n), new Float64Array(n * n)];
  const rnd = seededRandom(5);
  for (let i = 0; i < n * n; i++) [x[i], y[i]] = [rnd() - 0.5, rnd() - 0.5];
  const out: string[] = [];
  const add = (engine: string, run: () => void): void => {
    const t = time(run);
    out.push(
      `  ${engine.padEnd(26)} ${(flops / t.best / 1e9).toFixed(2).padStart(8)} ${(flops / t.median / 1e9).toFixed(2).padStart(8)}`,
    );
  };
  add('ts (reference engine)', () =>
    gemmTs({ m: n, n, k: n, alpha: 1, beta: 0, transA: false, transB: false }, x, y, z),
  );
  const g = loadWasmGemm().gemm;
  if (g) add('wasm simd f64x2', () => g.dgemm(false, false, n, n, n, 1, x, n, y, n, 0, z, n));
  const ob = loadOpenBlas().blas;
  if (ob) {
    const threads = ob.getThreads();
    ob.setThreads(1);
    add('openblas dgemm, 1 thread', () => ob.dgemm(false, false, n, n, n, 1, x, n, y, n, 0, z, n));
    ob.setThreads(threads);
  }
  console.log(`CPU GEMM f64 n=${n} (GFLOP/s, best and median)`);
  for (const line of out) console.log(line);
}

if (isMainThread) {
  sideBySide();
  float64Rows();
  await concurrentWasm(intOption(values['threads'], 'threads', availableParallelism(), 1, 1024));
} else if (workerData === 'wasm') {
  wasmWorker();
}
