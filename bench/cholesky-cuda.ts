/**
 * f32 Cholesky on one GPU: the tiled task graph through rt.submit (dmdas, critical-path priorities,
 * tiles already resident on the GPU) against one cuSOLVER potrf call on the same matrix, in the same
 * process. Prints TFLOP/s (n³/3 flops) for both, the ratio (issue 4 target: ≥ 0.8), and ‖L·Lᵀ − A‖ on
 * sampled entries in float64.
 *   node dist/bench/cholesky-cuda.js [--n 32768] [--tiles 4096,2048] [--scheduler dmdas] [--json f]
 */
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { Runtime, type HostArray, type Tensor } from 'tandem';
import { tiled } from 'tandem/workloads';

const { spdValue, submitCholesky } = tiled;
type TileMatrix = tiled.TileMatrix;

const { values } = parseArgs({
  options: {
    n: { type: 'string', default: '32768' },
    tiles: { type: 'string', default: '4096,2048' },
    scheduler: { type: 'string', default: 'dmdas' },
    json: { type: 'string' },
    /** 'cpu' runs the same code on the CPU backend (a dry run on machines without a GPU). */
    device: { type: 'string', default: 'cuda' },
  },
});
const n = Number(values.n);
const tileSizes = values.tiles.split(',').map(Number);
for (const t of tileSizes) if (!(t > 0 && n % t === 0)) throw new Error(`tile ${t} must divide n = ${n}`);

const rt = await Runtime.create({
  backends: values.device === 'cpu' ? ['cpu'] : ['cpu', values.device],
  scheduler: values.scheduler,
  ...(process.env['TANDEM_CACHE_DIR'] ? { cacheDir: process.env['TANDEM_CACHE_DIR'] } : {}),
  log: (m) => process.stderr.write(`[tandem] ${m}\n`),
});
const DEV = values.device;
const cuda = rt.devices.find((d) => d.info.kind === DEV);
if (!cuda) {
  const why = rt.backends.find((b) => b.kind === DEV)?.reason ?? 'not opened';
  console.log(`skip: no ${DEV} device (${why})`);
  await rt.close();
  process.exit(0);
}
console.log(`device ${cuda.info.id} ${cuda.info.name}; f32 Cholesky n=${n}; scheduler ${values.scheduler}`);

const value = spdValue(n, 9);
const flops = n ** 3 / 3;
const ms = (t0: number): number => performance.now() - t0;
const tflops = (t: number): number => flops / t / 1e9;

/** The whole matrix once on the host (row-major); tiles are cut from it. */
let t0 = performance.now();
const whole = new Float32Array(n * n);
for (let i = 0; i < n; i++) {
  const o = i * n;
  for (let j = 0; j < n; j++) whole[o + j] = value(i, j);
}
console.log(`matrix built on the host in ${(ms(t0) / 1000).toFixed(1)} s`);

/** Makes a tensor resident (and the only valid copy) on the GPU: an in-place scale by 1 there. */
async function toGpu(ts: readonly Tensor[]): Promise<void> {
  await Promise.all(
    ts.map((x) => rt.submit({ kernel: 'scale', args: { x }, scalars: { alpha: 1 }, device: DEV }).done),
  );
}

function tilesOf(tile: number): TileMatrix {
  const nt = n / tile;
  const tiles: Tensor[][] = [];
  for (let m = 0; m < nt; m++) {
    const row: Tensor[] = [];
    for (let c = 0; c <= m; c++) {
      const data = new Float32Array(tile * tile);
      for (let i = 0; i < tile; i++)
        data.set(
          whole.subarray((m * tile + i) * n + c * tile, (m * tile + i) * n + c * tile + tile),
          i * tile,
        );
      row.push(rt.tensor([tile, tile], 'f32', data));
    }
    tiles.push(row);
  }
  return { n, tile, nt, dtype: 'f32', tiles };
}

function freeTiles(a: TileMatrix): void {
  for (const row of a.tiles) for (const t of row) rt.free(t);
}

/** max |(L·Lᵀ)_ij − A_ij| / n over sampled (i, j), j ≤ i, computed in float64 from the tiles of L. */
async function residual(a: TileMatrix): Promise<number> {
  const host: HostArray[][] = [];
  for (const row of a.tiles) host.push(await Promise.all(row.map((t) => rt.read(t))));
  const t = a.tile;
  const L = (i: number, p: number): number =>
    Number(host[Math.floor(i / t)]![Math.floor(p / t)]![(i % t) * t + (p % t)]);
  const rows = [0, 1, t - 1, t, Math.floor(n / 3), Math.floor(n / 2) + 3, n - t, n - 1];
  let worst = 0;
  for (const i of rows)
    for (let s = 0; s < 24; s++) {
      const j = s === 0 ? i : Math.floor((i * (s * 0.6180339887 + 0.1)) % (i + 1));
      let sum = 0;
      for (let p = 0; p <= j; p++) sum += L(i, p) * L(j, p);
      worst = Math.max(worst, Math.abs(sum - value(i, j)) / n);
    }
  return worst;
}

// Warm-up: cuSOLVER/cuBLAS handles, lazily loaded kernels, and the scheduler's models of each tile op.
{
  const wn = Math.min(4096, n);
  const w = rt.tensor([wn, wn], 'f32', spdMatrix(wn));
  await toGpu([w]);
  await rt.submit({ kernel: 'potrf', args: { a: w }, device: DEV }).done;
  rt.free(w);
}
function spdMatrix(m: number): Float32Array {
  const v = spdValue(m, 3);
  const x = new Float32Array(m * m);
  for (let i = 0; i < m; i++) for (let j = 0; j < m; j++) x[i * m + j] = v(i, j);
  return x;
}

// One cuSOLVER potrf call on the whole matrix, data on the GPU.
const single = rt.tensor([n, n], 'f32', whole);
await toGpu([single]);
t0 = performance.now();
await rt.submit({ kernel: 'potrf', args: { a: single }, device: DEV }).done;
const singleMs = ms(t0);
rt.free(single);
console.log(`one cuSOLVER potrf call: ${singleMs.toFixed(1)} ms, ${tflops(singleMs).toFixed(2)} TFLOP/s`);

interface Row {
  tile: number;
  tasks: number;
  ms: number;
  tflops: number;
  ratio: number;
  residual: number;
}
const rows: Row[] = [];
for (const tile of tileSizes) {
  // Warm-up at this tile size (models, kernels), then the timed run on fresh tiles.
  const warm = tilesOf(tile);
  await toGpu(warm.tiles.flat());
  const wnt = Math.min(warm.nt, 4);
  const top = { ...warm, n: wnt * tile, nt: wnt, tiles: warm.tiles.slice(0, wnt) };
  await submitCholesky(rt, top, { device: DEV }).wait();
  freeTiles(warm);
  const a = tilesOf(tile);
  await toGpu(a.tiles.flat());
  t0 = performance.now();
  const run = submitCholesky(rt, a, { device: DEV });
  await run.wait();
  const tiledMs = ms(t0);
  const res = await residual(a);
  freeTiles(a);
  const row = {
    tile,
    tasks: run.tasks.length,
    ms: tiledMs,
    tflops: tflops(tiledMs),
    ratio: singleMs / tiledMs,
    residual: res,
  };
  rows.push(row);
  console.log(
    `task graph, tile ${tile} (${row.tasks} tasks): ${tiledMs.toFixed(1)} ms, ${row.tflops.toFixed(2)} TFLOP/s, ` +
      `${row.ratio.toFixed(3)}x cuSOLVER; max |LLᵀ−A|/n on samples ${res.toExponential(2)}`,
  );
}

console.log('\n| f32 Cholesky n | tile | ms | TFLOP/s | x cuSOLVER potrf | residual |');
console.log('| --- | --- | --- | --- | --- | --- |');
console.log(`| ${n} | one cuSOLVER call | ${singleMs.toFixed(1)} | ${tflops(singleMs).toFixed(2)} | 1 | |`);
for (const r of rows)
  console.log(
    `| ${n} | ${r.tile} | ${r.ms.toFixed(1)} | ${r.tflops.toFixed(2)} | ${r.ratio.toFixed(3)} | ${r.residual.toExponential(2)} |`,
  );
if (values.json)
  writeFileSync(
    values.json,
    JSON.stringify({ n, device: cuda.info.name, singleMs, singleTflops: tflops(singleMs), rows }, null, 2),
  );
await rt.close();
