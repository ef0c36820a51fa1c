/**
 * Multi-GPU benchmarks (issue 9), for any number of GPUs; each part prints why it skips with fewer
 * than two:
 *  - peer-to-peer bandwidth for every ordered pair, each direction and both at once (cuMemcpyPeerAsync
 *    through the backend's route), the staged path for comparison, and PyTorch's tensor.to('cuda:1')
 *    in a child process of the same run;
 *  - bf16 tiled GEMM 32768³ over all GPUs vs one (dmdas spreads the tiles);
 *  - f32 tiled Cholesky n=65536 over all GPUs vs one.
 *   node dist/bench/multigpu.js [--gemm-n 32768] [--gemm-tile 8192] [--chol-n 65536] [--chol-tile 4096] [--json f]
 * Never creates multicast objects; the child Python gets NCCL_NVLS_ENABLE=0,
 * TORCH_SYMM_MEM_DISABLE_MULTICAST=1 and NVSHMEM_DISABLE_NVLS=1.
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { CudaDevice } from '../src/devices/cuda/cuda-device.js';
import type { CudaBuffer } from '../src/devices/cuda/memory-node.js';
import { PeerLinks, type PeerPath } from '../src/devices/cuda/peer.js';
import { Runtime } from '../src/runtime/runtime.js';
import { fillTiles, freeTiles, submitGemmTiles, tileDevice } from '../src/workloads/multi-gpu/index.js';
import { spdValue, submitCholesky, type TileMatrix } from '../src/workloads/tiled/index.js';

const NO_MULTICAST = {
  NCCL_NVLS_ENABLE: '0',
  TORCH_SYMM_MEM_DISABLE_MULTICAST: '1',
  NVSHMEM_DISABLE_NVLS: '1',
};
Object.assign(process.env, NO_MULTICAST);

const { values } = parseArgs({
  options: {
    'gemm-n': { type: 'string', default: '32768' },
    'gemm-tile': { type: 'string', default: '8192' },
    'chol-n': { type: 'string', default: '65536' },
    'chol-tile': { type: 'string', default: '4096' },
    'p2p-mib': { type: 'string', default: '1024' },
    json: { type: 'string' },
  },
});
const report: Record<string, unknown> = {};
const GB = 1e9;

const rt = await Runtime.create({
  backends: ['cpu', 'cuda'],
  scheduler: 'dmdas',
  ...(process.env['TANDEM_CACHE_DIR'] ? { cacheDir: process.env['TANDEM_CACHE_DIR'] } : {}),
  log: (m) => process.stderr.write(`[tandem] ${m}\n`),
});
const gpus = rt.devices.filter((d) => d.info.kind === 'cuda') as CudaDevice[];
const why = rt.backends.find((b) => b.kind === 'cuda')?.reason ?? '';
console.log(
  `GPUs: ${gpus.map((d) => `${d.info.id} ${d.info.name} peerCopy=${String(d.caps.peerCopy)}`).join(', ') || `none (${why})`}`,
);
if (gpus.length < 2) {
  const r = `multi-GPU benchmarks need at least 2 GPUs, this machine has ${gpus.length}${why ? ` (${why})` : ''}`;
  for (const part of [
    'P2P bandwidth vs torch',
    'bf16 tiled GEMM all GPUs vs one',
    'f32 Cholesky all GPUs vs one',
  ])
    console.log(`skip ${part}: ${r}`);
  if (values.json) writeFileSync(values.json, JSON.stringify({ skipped: r }, null, 2));
  await rt.close();
  process.exit(0);
}
const ids = gpus.map((d) => d.info.id);

// ---- P2P bandwidth --------------------------------------------------------------------------------
const bytes = Number(values['p2p-mib']) * (1 << 20);
const peers = new PeerLinks(gpus, gpus[0]!.context.driver, { peerAccess: true });
const staged = new PeerLinks(gpus, gpus[0]!.context.driver, { peerAccess: false });
console.log(
  `peer access: ${JSON.stringify(peers.access)}${peers.notes.length ? `; ${peers.notes.join('; ')}` : ''}`,
);
const bufs = new Map<CudaDevice, [CudaBuffer, CudaBuffer]>(
  gpus.map((d) => [d, [d.node.alloc(bytes), d.node.alloc(bytes)]]),
);
const copy = (links: PeerLinks, a: CudaDevice, b: CudaDevice, force?: PeerPath): Promise<void> =>
  new Promise((res, rej) =>
    links.copy(a, bufs.get(a)![0], b, bufs.get(b)![1], bytes, (e) => (e ? rej(e) : res()), force),
  );
async function gbps(n: number, f: () => Promise<unknown>, moved: number): Promise<number> {
  await f();
  const xs: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await f();
    xs.push(moved / ((performance.now() - t0) / 1000) / GB);
  }
  return xs.sort((p, q) => p - q)[n >> 1]!;
}
const p2p: Record<string, number> = {};
for (const a of gpus)
  for (const b of gpus) {
    if (a === b || b.info.id < a.info.id) continue;
    const k = `${a.info.id}<->${b.info.id}`;
    p2p[`${a.info.id}->${b.info.id}`] = await gbps(5, () => copy(peers, a, b), bytes);
    p2p[`${b.info.id}->${a.info.id}`] = await gbps(5, () => copy(peers, b, a), bytes);
    p2p[`${k} both`] = await gbps(5, () => Promise.all([copy(peers, a, b), copy(peers, b, a)]), 2 * bytes);
    p2p[`${a.info.id}->${b.info.id} staged`] = await gbps(3, () => copy(staged, a, b, 'staged'), bytes);
  }
for (const [, [x, y]] of bufs) {
  x.node.free(x);
  y.node.free(y);
}
peers.close();
staged.close();
const PY = `
import json, sys, time, torch
n = int(sys.argv[1]); out = {}
x = torch.empty(n, dtype=torch.uint8, device='cuda:0'); y = torch.empty(n, dtype=torch.uint8, device='cuda:1')
def med(f, moved, reps=5):
    f(); torch.cuda.synchronize(0); torch.cuda.synchronize(1); ts = []
    for _ in range(reps):
        t0 = time.perf_counter(); f(); torch.cuda.synchronize(0); torch.cuda.synchronize(1); ts.append(time.perf_counter() - t0)
    return moved / sorted(ts)[reps // 2] / 1e9
s0 = torch.cuda.Stream(device=0); s1 = torch.cuda.Stream(device=1)
def both():
    with torch.cuda.stream(s0): a = x.to('cuda:1', non_blocking=True)
    with torch.cuda.stream(s1): b = y.to('cuda:0', non_blocking=True)
out['cuda:0->cuda:1'] = med(lambda: x.to('cuda:1'), n)
out['cuda:1->cuda:0'] = med(lambda: y.to('cuda:0'), n)
out['both'] = med(both, 2 * n)
out['torch'] = torch.__version__
print(json.dumps(out))
`;
const py = spawnSync('python3', ['-c', PY, String(bytes)], {
  encoding: 'utf8',
  env: { ...process.env, ...NO_MULTICAST },
  timeout: 120_000,
});
let torch: Record<string, number | string> = {};
try {
  torch = JSON.parse(py.stdout.trim().split('\n').pop() ?? '') as Record<string, number | string>;
} catch {
  console.log(`note: torch baseline failed: ${(py.stderr || py.error?.message || '').slice(-400)}`);
}
console.log(`\n| P2P ${bytes >> 20} MiB | Tandem GB/s | PyTorch ${String(torch['torch'] ?? '?')} GB/s |`);
console.log('| --- | --- | --- |');
for (const [k, v] of Object.entries(p2p)) {
  const tk =
    k === 'cuda0->cuda1'
      ? 'cuda:0->cuda:1'
      : k === 'cuda1->cuda0'
        ? 'cuda:1->cuda:0'
        : k === 'cuda0<->cuda1 both'
          ? 'both'
          : '';
  const tv = tk ? torch[tk] : undefined;
  console.log(`| ${k} | ${v.toFixed(1)} | ${typeof tv === 'number' ? tv.toFixed(1) : ''} |`);
}
report['p2p'] = { bytes, tandem: p2p, torch };

// ---- bf16 tiled GEMM ---------------------------------------------------------------------------------
async function gemm(n: number, tile: number, devs: string[], constraint: string): Promise<number> {
  const a = await fillTiles(rt, n, tile, 'bf16', devs, () => 0.5);
  const b = await fillTiles(rt, n, tile, 'bf16', devs, () => 0.25);
  const c = await fillTiles(rt, n, tile, 'bf16', devs, () => 0);
  const t0 = performance.now();
  const run = submitGemmTiles(rt, a, b, c, { device: constraint });
  await run.wait();
  const ms = performance.now() - t0;
  for (const g of [a, b, c]) freeTiles(rt, g);
  return run.flops / ms / 1e9;
}
const gn = Number(values['gemm-n']);
const gt = Number(values['gemm-tile']);
await gemm(Math.min(gn, 2 * gt), gt, ids, 'cuda'); // warm-up: cuBLAS plans, the models of gemm per GPU
await gemm(Math.min(gn, 2 * gt), gt, [ids[0]!], ids[0]!);
const gemmOne = await gemm(gn, gt, [ids[0]!], ids[0]!);
const gemmAll = await gemm(gn, gt, ids, 'cuda');
console.log(`\n| bf16 tiled GEMM ${gn}³, tile ${gt} | TFLOP/s |`);
console.log('| --- | --- |');
console.log(`| one GPU (${ids[0]}) | ${gemmOne.toFixed(1)} |`);
console.log(`| ${gpus.length} GPUs | ${gemmAll.toFixed(1)} |`);
console.log(`| speed-up (target ≥ 1.8 on 2) | ${(gemmAll / gemmOne).toFixed(2)}x |`);
report['gemm'] = { n: gn, tile: gt, oneTflops: gemmOne, allTflops: gemmAll, speedup: gemmAll / gemmOne };

// ---- f32 Cholesky ------------------------------------------------------------------------------------
/**
 * A diagonally dominant (so positive definite) matrix: diagonal tiles from spdValue (values in [0, 1),
 * n on the diagonal) written from the host, off-diagonal tiles 0.5 filled on the GPUs.
 */
async function cholesky(n: number, tile: number, devs: string[], constraint: string): Promise<number> {
  const value = spdValue(n, 5);
  const g = await fillTiles(rt, n, tile, 'f32', devs, (m, c) => (m === c ? null : 0.5), true);
  const moves: Promise<unknown>[] = [];
  for (let m = 0; m < g.nt; m++) {
    const data = new Float32Array(tile * tile);
    for (let i = 0; i < tile; i++)
      for (let j = 0; j < tile; j++) data[i * tile + j] = value(m * tile + i, m * tile + j);
    rt.free(g.tiles[m]![m]!);
    const t = rt.tensor([tile, tile], 'f32', data);
    g.tiles[m]![m] = t;
    moves.push(
      rt.submit({ kernel: 'scale', args: { x: t }, scalars: { alpha: 1 }, device: tileDevice(devs, m, m) })
        .done,
    );
  }
  await Promise.all(moves);
  const a: TileMatrix = { n, tile, nt: g.nt, dtype: 'f32', tiles: g.tiles };
  const t0 = performance.now();
  const run = submitCholesky(rt, a, { device: constraint });
  await run.wait();
  const ms = performance.now() - t0;
  freeTiles(rt, g);
  return run.flops / ms / 1e9;
}
const cn = Number(values['chol-n']);
const ct = Number(values['chol-tile']);
await cholesky(Math.min(cn, 4 * ct), ct, ids, 'cuda'); // warm-up
const cholOne = await cholesky(cn, ct, [ids[0]!], ids[0]!);
const cholAll = await cholesky(cn, ct, ids, 'cuda');
console.log(`\n| f32 tiled Cholesky n=${cn}, tile ${ct} | TFLOP/s |`);
console.log('| --- | --- |');
console.log(`| one GPU (${ids[0]}) | ${cholOne.toFixed(1)} |`);
console.log(`| ${gpus.length} GPUs | ${cholAll.toFixed(1)} |`);
console.log(`| speed-up | ${(cholAll / cholOne).toFixed(2)}x |`);
report['cholesky'] = { n: cn, tile: ct, oneTflops: cholOne, allTflops: cholAll, speedup: cholAll / cholOne };
if (values.json) writeFileSync(values.json, JSON.stringify(report, null, 2));
await rt.close();
