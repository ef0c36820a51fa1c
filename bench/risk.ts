/**
 * Monte Carlo risk throughput and latency through the runtime: paths per second of a large European
 * price, and p50/p99 latency of a 10^6-path price end to end (submit, run, read back, estimate), with
 * PyTorch written the straightforward way (bench/py/risk_torch.py) in the same run when --torch.
 *   node dist/bench/risk.js [--device cpu|cuda|webgpu] [--paths N] [--runs R] [--p99-paths M]
 *       [--steady-warmup W] [--torch] [--json out.json]
 * Defaults: cpu → 2^22 paths, 20 latency runs; GPUs → 2^26 paths, 1000 latency runs of 10^6 paths,
 * measured after 20 warm-up prices and again at steady state after W more (GPUs 3000, cpu 0: none).
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { intOption, parse } from '../src/cli/output.js';
import { Runtime } from 'tandem';
import { risk } from 'tandem/workloads';
import { mcRows, mcScalars } from '../src/kernels/mc_common/def.js';
import { mcSpec, streamCount } from '../src/kernels/mc_common/engine.js';
import { gcLine, slowWithGc, watchGc } from './gc-watch.js';
import { pollStats } from './poll-stats.js';
import { quantile } from './quantile.js';

const { EXAMPLE_PORTFOLIO, portfolioVar, priceOption, validateOptionParams } = risk;

// --json names the file to write (not the CLI's boolean --json).
const { values } = parse(process.argv.slice(2), {
  device: { type: 'string', default: 'cpu' },
  paths: { type: 'string' },
  runs: { type: 'string' },
  'p99-paths': { type: 'string' },
  'steady-warmup': { type: 'string' },
  torch: { type: 'boolean' },
  json: { type: 'string' },
});
const device = values['device'] as 'cpu' | 'cuda' | 'webgpu';
const gpu = device !== 'cpu';
const paths = intOption(values['paths'], 'paths', gpu ? 2 ** 26 : 2 ** 22, 1, 2 ** 40);
const runs = intOption(values['runs'], 'runs', gpu ? 1000 : 20);
const p99Paths = intOption(values['p99-paths'], 'p99-paths', 1_000_000, 1, 2 ** 40);
/** Prices run between the first latency measurement and the steady-state one (also PyTorch's). */
const STEADY_WARMUP = intOption(values['steady-warmup'], 'steady-warmup', gpu ? 3000 : 0, 0, 1e6);
const json = values['json'] as string | undefined;
const out: Record<string, unknown> = { device, paths, runs, p99Paths };

function torch(): Record<string, number> | null {
  const r = spawnSync(
    'python3',
    [
      'bench/py/risk_torch.py',
      '--paths',
      String(paths),
      '--runs',
      String(runs),
      '--p99-paths',
      String(p99Paths),
      '--steady-warmup',
      String(STEADY_WARMUP),
    ],
    { encoding: 'utf8' },
  );
  try {
    return JSON.parse(r.stdout.trim().split('\n').pop() ?? '') as Record<string, number>;
  } catch {
    console.log(`note: torch baseline failed: ${r.stderr.slice(-400)}`);
    return null;
  }
}

// PyTorch first so the two never share the GPU.
const baseline = values['torch'] === true ? torch() : null;
const rt = await Runtime.create({
  backends: [device],
  calibrate: false,
  ...(process.env.TANDEM_CACHE_DIR ? { cacheDir: process.env.TANDEM_CACHE_DIR } : {}),
});
const status = rt.backends.find((b) => b.kind === device);
if (!status?.available) {
  console.error(`${device} unavailable: ${status?.reason ?? 'not opened'}`);
  process.exit(2);
}
console.log(`device ${rt.devices.map((d) => d.info.name).join(', ')}; node ${process.version}`);
const base = { spot: 100, strike: 100, rate: 0.05, vol: 0.2, maturity: 1, device };
// CUDA completion polling: how many polls came from setImmediate and how many waited on the 1 ms timer.
const polls = (): string => {
  const p = pollStats(rt.devices[0]);
  return p ? ` [polls: ${p.immediatePolls} immediate, ${p.timerPolls} timer; ${p.spins} spins]` : '';
};
const tput: Record<string, number> = {};
for (const antithetic of [false, true]) {
  // Warm-up: the kernel compiles (or loads) on the first call, and the runtime's submit path and the
  // workload's host code run in V8's interpreter for their first few dozen calls.
  for (let k = 0; k < (gpu ? 30 : 1); k++)
    await priceOption(rt, { ...base, paths: gpu ? paths : Math.min(paths, 1 << 20), antithetic });
  const times: number[] = [];
  let last = { price: 0, stdError: 0 };
  for (let k = 0; k < (gpu ? 21 : 5); k++) {
    const r = await priceOption(rt, { ...base, paths, antithetic, seed: 100 + k });
    times.push(r.seconds);
    last = r;
  }
  times.sort((a, b) => a - b);
  const mid = times[times.length >> 1]!;
  tput[antithetic ? 'antithetic' : 'plain'] = paths / mid;
  console.log(
    `european ${antithetic ? 'antithetic' : 'plain'}: ${paths} paths one price at a time, median of ${times.length} ${(mid * 1e3).toFixed(3)} ms (min ${(times[0]! * 1e3).toFixed(3)}), ${(paths / mid).toExponential(3)} paths/s${antithetic ? ` (${(paths / 2 / mid).toExponential(3)} antithetic pairs/s)` : ''}, price ${last.price.toFixed(5)} ± ${last.stdError.toExponential(2)}${polls()}`,
  );
}
// Latency right after the first throughput phase, as in the PyTorch baseline's process (its 2^26-path
// prices, then 20 warm-up prices and the timed ones), so both measure after the same kind of history.
// Then again at steady state: V8 still tiers the price path's functions up to its optimizing compiler,
// and the heap still grows to its working size (a mark-compact with incremental marking steps), over the
// first few thousand calls — a transient PyTorch's interpreter does not have; a service lives past it.
// Both figures are printed, each beside PyTorch's measured the same way.
interface Latency {
  readonly lat: number[];
  readonly spans: Array<[number, number]>;
  readonly gcRuns: ReturnType<ReturnType<typeof watchGc>['stop']>;
}
async function latency(warmups: number, seed0: number): Promise<Latency> {
  for (let k = 0; k < warmups; k++) {
    const { spot, strike, rate, vol, maturity } = base;
    await priceOption(rt, { spot, strike, rate, vol, maturity, device, paths: p99Paths, seed: seed0 + k });
  }
  const lat: number[] = [];
  // What the garbage collector did during these runs (scavenge pauses land in the p99).
  const spans: Array<[number, number]> = [];
  const gc = watchGc();
  for (let k = 0; k < runs; k++) {
    const t0 = performance.now();
    // A literal, not `{ ...base, paths, seed }`: on Node 20 that pattern alone makes each scavenge keep
    // and promote ~60 KiB of dead objects (see bench/risk-gc.ts --spread), the caller's garbage.
    const { spot, strike, rate, vol, maturity } = base;
    await priceOption(rt, {
      spot,
      strike,
      rate,
      vol,
      maturity,
      device,
      paths: p99Paths,
      seed: seed0 + warmups + k,
    });
    const t1 = performance.now();
    lat.push(t1 - t0);
    spans.push([t0, t1]);
  }
  const gcRuns = gc.stop();
  lat.sort((a, b) => a - b);
  return { lat, spans, gcRuns };
}
/** The latency lines of one measurement: quantiles, the slowest runs, what the GC did meanwhile. */
function reportLatency(what: string, { lat, spans, gcRuns }: Latency): void {
  const q = (p: number): number => quantile(lat, p);
  console.log(
    `${p99Paths}-path price end to end over ${runs} runs (${what}): p50 ${q(0.5).toFixed(3)} ms, p99 ${q(0.99).toFixed(3)} ms, max ${lat[lat.length - 1]!.toFixed(3)} ms${polls()}`,
  );
  const worst = Math.max(1, Math.round(runs / 100));
  // Which runs were the slowest (an early cluster means warm-up, a spread means something periodic).
  const slowest = spans
    .map(([a, b], k): [number, number] => [k, b - a])
    .sort((a, b) => b[1] - a[1])
    .slice(0, worst);
  console.log(
    `  slowest ${worst} runs (index: ms): ${slowest.map(([k, ms]) => `${k}: ${ms.toFixed(3)}`).join(', ')}`,
  );
  console.log(
    `  gc during the runs: ${gcLine(gcRuns, runs)}; ${slowWithGc(spans, gcRuns.pauses, worst)} of the slowest ${worst} overlap a GC pause`,
  );
}
const cold = await latency(20, 0);
const steady = STEADY_WARMUP > 0 ? await latency(STEADY_WARMUP, 100_000) : null;
const lat = cold.lat;
// The same price taken apart: submit → task done (kernel + completion) and task done → partial sums on
// the host (with eager read-back, a host memcpy).
const lat1: number[] = [];
const lat2: number[] = [];
{
  const spec = mcSpec(validateOptionParams({ ...base, paths: p99Paths, antithetic: false, seed: 3 }));
  const streams = streamCount(spec);
  for (let k = 0; k < runs; k++) {
    const t0 = performance.now();
    const o = rt.tensor([mcRows(streams), 3], 'f32');
    const h = rt.submit({
      kernel: 'mc_european',
      args: { out: o },
      scalars: mcScalars(spec, 0, streams),
      device,
    });
    await h.done;
    const t1 = performance.now();
    await rt.read(o);
    lat2.push(performance.now() - t1);
    lat1.push(t1 - t0);
    rt.free(o);
  }
  lat1.sort((a, b) => a - b);
  lat2.sort((a, b) => a - b);
}
const qq = quantile;
console.log(
  `  parts: submit→done p50 ${qq(lat1, 0.5).toFixed(3)} p99 ${qq(lat1, 0.99).toFixed(3)} ms; done→read p50 ${qq(lat2, 0.5).toFixed(3)} p99 ${qq(lat2, 0.99).toFixed(3)} ms`,
);
reportLatency('after 20 warm-up prices', cold);
if (steady) reportLatency(`steady state, after ${STEADY_WARMUP} more`, steady);
const q = (p: number): number => quantile(lat, p);
const qs = (p: number): number => (steady ? quantile(steady.lat, p) : Number.NaN);

// Throughput end to end: prices issued concurrently (as a service or a risk batch does), so one price's
// read-back and host work overlap the next one's kernel. Every price is complete (run, read, estimated).
const concurrent: Record<string, number> = {};
if (gpu) {
  for (const antithetic of [false, true]) {
    const batch = async (n: number): Promise<number> => {
      const t0 = performance.now();
      await Promise.all(
        Array.from({ length: n }, (_, k) => priceOption(rt, { ...base, paths, antithetic, seed: 500 + k })),
      );
      return (performance.now() - t0) / 1000;
    };
    await batch(4);
    const secs: number[] = [];
    for (let k = 0; k < 5; k++) secs.push(await batch(16));
    secs.sort((a, b) => a - b);
    concurrent[antithetic ? 'antithetic' : 'plain'] = (16 * paths) / secs[2]!;
    console.log(
      `european ${antithetic ? 'antithetic' : 'plain'}, 16 prices in flight: median ${((secs[2]! / 16) * 1e3).toFixed(3)} ms a price, ${((16 * paths) / secs[2]!).toExponential(3)} paths/s end to end${polls()}`,
    );
  }
}
// Where the time goes: the kernel alone (20 back-to-back tasks on one output, chained in the GPU queue,
// so launches and completion polling overlap the kernels) against one price end to end.
const kernelOnly: Record<string, number> = {};
if (gpu) {
  for (const antithetic of [false, true]) {
    const spec = mcSpec(validateOptionParams({ ...base, paths, antithetic, seed: 7 }));
    const streams = streamCount(spec);
    const o = rt.tensor([mcRows(streams), 3], 'f32');
    const scalars = mcScalars(spec, 0, streams);
    const batch = async (n: number): Promise<number> => {
      const t0 = performance.now();
      const hs = [];
      for (let k = 0; k < n; k++)
        hs.push(rt.submit({ kernel: 'mc_european', args: { out: o }, scalars, device }));
      await Promise.all(hs.map((h) => h.done));
      return (performance.now() - t0) / n;
    };
    await batch(3);
    const per = await batch(20);
    kernelOnly[antithetic ? 'antithetic' : 'plain'] = per;
    // One price's task alone, then its read: submit → done and done → partial sums on the host.
    const one: number[] = [];
    const rd: number[] = [];
    for (let k = 0; k < 7; k++) {
      const t0 = performance.now();
      await rt.submit({ kernel: 'mc_european', args: { out: o }, scalars, device }).done;
      const t1 = performance.now();
      await rt.read(o);
      rd.push(performance.now() - t1);
      one.push(t1 - t0);
    }
    one.sort((a, b) => a - b);
    rd.sort((a, b) => a - b);
    console.log(
      `  one task: submit→done median ${(one[3]! * 1e3).toFixed(1)} us (min ${(one[0]! * 1e3).toFixed(1)}), read median ${(rd[3]! * 1e3).toFixed(1)} us${polls()}`,
    );
    console.log(
      `kernel only (20 back to back), ${antithetic ? 'antithetic' : 'plain'}: ${(per * 1e3).toFixed(1)} us per ${paths}-path price, ${(paths / (per / 1e3)).toExponential(3)} paths/s`,
    );
    rt.free(o);
  }
}
// The first call compiles (or loads) the kernel: time the second.
await priceOption(rt, { ...base, type: 'asian', steps: 64, paths: 1 << 12 });
const asian = await priceOption(rt, {
  ...base,
  type: 'asian',
  steps: 64,
  paths: Math.max(2, Math.floor(paths / 64)),
});
console.log(
  `asian (64 dates): ${asian.paths} paths in ${(asian.seconds * 1e3).toFixed(2)} ms, ${(asian.paths / asian.seconds).toExponential(3)} paths/s, ${((asian.paths * 64) / asian.seconds).toExponential(3)} path-steps/s`,
);
const v = await portfolioVar(rt, {
  portfolio: EXAMPLE_PORTFOLIO,
  scenarios: gpu ? 1_000_000 : 100_000,
  device,
});
console.log(
  `VaR 99% of the example portfolio: ${v.valueAtRisk.toFixed(2)} (ES ${v.expectedShortfall.toFixed(2)}), ${v.scenarios} scenarios, ${v.scenariosPerSecond.toExponential(3)} scenarios/s`,
);
Object.assign(out, {
  throughput: tput,
  concurrentThroughput: concurrent,
  kernelOnlyMs: kernelOnly,
  asian: { paths: asian.paths, seconds: asian.seconds },
  p50Ms: q(0.5),
  p99Ms: q(0.99),
  gc: { ...cold.gcRuns, pauses: undefined },
  steady: steady && {
    warmups: STEADY_WARMUP,
    p50Ms: qs(0.5),
    p99Ms: qs(0.99),
    gc: { ...steady.gcRuns, pauses: undefined },
  },
  var: v,
  torch: baseline,
});
if (baseline) {
  console.log('| what | tandem | pytorch | ratio |');
  console.log('| --- | ---: | ---: | ---: |');
  console.log(
    `| paths/s (plain) | ${tput.plain!.toExponential(3)} | ${baseline.pathsPerSecond!.toExponential(3)} | ${(tput.plain! / baseline.pathsPerSecond!).toFixed(2)} |`,
  );
  console.log(
    `| paths/s (antithetic) | ${tput.antithetic!.toExponential(3)} | ${baseline.pathsPerSecond!.toExponential(3)} | ${(tput.antithetic! / baseline.pathsPerSecond!).toFixed(2)} |`,
  );
  for (const k of Object.keys(concurrent))
    console.log(
      `| paths/s (${k}, 16 prices in flight, end to end) | ${concurrent[k]!.toExponential(3)} | ${baseline.pathsPerSecond!.toExponential(3)} | ${(concurrent[k]! / baseline.pathsPerSecond!).toFixed(2)} |`,
    );
  for (const k of Object.keys(kernelOnly))
    console.log(
      `| paths/s (${k}, kernel back to back via rt.submit) | ${(paths / (kernelOnly[k]! / 1e3)).toExponential(3)} | ${baseline.pathsPerSecond!.toExponential(3)} | ${(paths / (kernelOnly[k]! / 1e3) / baseline.pathsPerSecond!).toFixed(2)} |`,
    );
  console.log(
    `| 1e6-path p99 ms (20 warm-up prices) | ${q(0.99).toFixed(3)} | ${baseline.p99Ms!.toFixed(3)} | ${(baseline.p99Ms! / q(0.99)).toFixed(2)} |`,
  );
  if (steady && baseline.p99SteadyMs !== undefined)
    console.log(
      `| 1e6-path p99 ms (steady state, ${STEADY_WARMUP} more) | ${qs(0.99).toFixed(3)} | ${baseline.p99SteadyMs.toFixed(3)} | ${(baseline.p99SteadyMs / qs(0.99)).toFixed(2)} |`,
    );
}
const cudaStats = (rt.devices[0] as { transfers?: { stats?: unknown } } | undefined)?.transfers?.stats;
if (cudaStats) console.log(`cuda transfers: ${JSON.stringify(cudaStats)}`);
if (json) writeFileSync(json, JSON.stringify(out, null, 2));
await rt.close();
