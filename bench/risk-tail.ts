/**
 * Where the tail of a small price's latency comes from (issue 7: p99 of a 10^6-path price end to end
 * through the runtime, against PyTorch's). Runs, in one process, after a warm-up:
 *   - host:   a busy loop reading performance.now() for 2 s, counting gaps (the OS taking the CPU away);
 *   - turns:  `await setImmediate` chains (the event loop's own jitter, no GPU);
 *   - noop:   rt.submit of a noop kernel and await done (launch + completion detection floor);
 *   - parts:  a price taken apart as priceOption does it: host work before the kernel is in flight
 *             (validate, tensor, submit, read), submit → task done, done → read, estimate + free;
 *   - price:  priceOption itself.
 * Each line gives p50 / p90 / p99 / max and how many of the slowest 1 % overlap a GC pause.
 *   node dist/bench/risk-tail.js [--device cuda] [--runs 2000] [--paths 1000000]
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setImmediate as immediate } from 'node:timers/promises';
import { intOption, parse } from '../src/cli/output.js';
import { Runtime } from 'tandem';
import { risk } from 'tandem/workloads';
import { mcRows, mcScalars } from '../src/kernels/mc_common/def.js';
import { addPartialRows, estimate, mcSpec, streamCount } from '../src/kernels/mc_common/engine.js';
import { slowWithGc, watchGc } from './gc-watch.js';
import { quantile } from './quantile.js';
import { pollStats, type PollStats } from './poll-stats.js';

const { priceOption, validateOptionParams } = risk;

const { values } = parse(process.argv.slice(2), {
  device: { type: 'string', default: 'cuda' },
  runs: { type: 'string' },
  paths: { type: 'string' },
});
const device = values['device'] as 'cpu' | 'cuda' | 'webgpu';
const runs = intOption(values['runs'], 'runs', 2000);
const paths = intOption(values['paths'], 'paths', 1_000_000, 1, 2 ** 40);

const rt = await Runtime.create({ backends: [device], calibrate: false });
if (!rt.backends.find((b) => b.kind === device)?.available) {
  console.error(`${device} unavailable`);
  process.exit(2);
}
const q = quantile;
const fmt = (l: number[]): string => {
  const s = [...l].sort((a, b) => a - b);
  return `p50 ${(q(s, 0.5) * 1e3).toFixed(1)} p90 ${(q(s, 0.9) * 1e3).toFixed(1)} p99 ${(q(s, 0.99) * 1e3).toFixed(1)} max ${(s[s.length - 1]! * 1e3).toFixed(0)} µs`;
};
const NO_POLLS: PollStats = { immediatePolls: 0, timerPolls: 0, spins: 0, callbackMs: 0 };
const pollStatsNow = (): PollStats => pollStats(rt.devices[0]) ?? NO_POLLS;

/** Runs `body` `runs` times; prints the latency line with GC overlap and completion polls per run. */
async function measure(label: string, body: (k: number) => Promise<void>): Promise<number[]> {
  for (let k = 0; k < 200; k++) await body(k);
  const lat: number[] = [];
  const spans: Array<[number, number]> = [];
  const p0 = { ...pollStatsNow() };
  const loop = monitorEventLoopDelay({ resolution: 1 });
  loop.enable();
  const gc = watchGc();
  for (let k = 0; k < runs; k++) {
    const t0 = performance.now();
    await body(k);
    const t1 = performance.now();
    lat.push(t1 - t0);
    spans.push([t0, t1]);
  }
  const g = gc.stop();
  loop.disable();
  const p1 = pollStatsNow();
  const worst = Math.max(1, Math.round(runs / 100));
  console.log(
    `${label.padEnd(6)} ${fmt(lat)}; slowest ${worst}: ${slowWithGc(spans, g.pauses, worst)} with GC ` +
      `(${g.scavenges} scavenges, ${g.majors} major); polls/run ${((p1.immediatePolls - p0.immediatePolls) / runs).toFixed(1)} immediate ` +
      `${((p1.timerPolls - p0.timerPolls) / runs).toFixed(2)} timer ${((p1.spins - p0.spins) / runs).toFixed(2)} spins; loop delay max ${(loop.max / 1e6).toFixed(2)} ms`,
  );
  return lat;
}

// host: how often and how long the OS takes the CPU from a thread that never yields.
{
  const gaps: number[] = [];
  const end = performance.now() + 2000;
  let prev = performance.now();
  let n = 0;
  while (prev < end) {
    const t = performance.now();
    if (t - prev > 0.02) gaps.push(t - prev);
    prev = t;
    n++;
  }
  gaps.sort((a, b) => b - a);
  console.log(
    `host   ${n} clock reads in 2 s; ${gaps.length} gaps > 20 µs, longest ${gaps
      .slice(0, 5)
      .map((g) => (g * 1e3).toFixed(0))
      .join(', ')} µs; gaps > 100 µs: ${gaps.filter((g) => g > 0.1).length}`,
  );
}
await measure('turns', async () => {
  for (let i = 0; i < 8; i++) await immediate();
});
await measure('noop', async () => {
  await rt.submit({ kernel: 'noop', device }).done;
});

const base = { spot: 100, strike: 100, rate: 0.05, vol: 0.2, maturity: 1, device, paths };
const spec = mcSpec(validateOptionParams({ ...base, seed: 1 }));
const streams = streamCount(spec);
const partA: number[] = [];
const partB: number[] = [];
const partC: number[] = [];
const partD: number[] = [];
let record = false;
await measure('parts', async (k) => {
  const t0 = performance.now();
  const cfg = validateOptionParams({ ...base, seed: k });
  const o = rt.tensor([mcRows(streams), 3], 'f32');
  const h = rt.submit({
    kernel: 'mc_european',
    args: { out: o },
    scalars: mcScalars(mcSpec(cfg), 0, streams),
    device,
  });
  const read = rt.read(o);
  const t1 = performance.now();
  await h.done;
  const t2 = performance.now();
  const rows = await read;
  const t3 = performance.now();
  const total = { sum: 0, sumSq: 0, count: 0 };
  addPartialRows(total, rows);
  estimate(spec, total);
  rt.free(o);
  const t4 = performance.now();
  if (record) {
    partA.push(t1 - t0);
    partB.push(t2 - t1);
    partC.push(t3 - t2);
    partD.push(t4 - t3);
  }
  record = true;
});
partA.splice(0, 199);
partB.splice(0, 199);
partC.splice(0, 199);
partD.splice(0, 199);
console.log(`  host work before the kernel runs: ${fmt(partA)}`);
console.log(`  submit → task done:               ${fmt(partB)}`);
console.log(`  task done → read resolved:        ${fmt(partC)}`);
console.log(`  estimate + free:                  ${fmt(partD)}`);
await measure('price', async (k) => {
  await priceOption(rt, {
    spot: 100,
    strike: 100,
    rate: 0.05,
    vol: 0.2,
    maturity: 1,
    device,
    paths,
    seed: k,
  });
});
await rt.close();
