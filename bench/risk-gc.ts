/**
 * Garbage per price: runs `priceOption` (a European option of --paths paths) --runs times, one after
 * the other as the p99 line of bench/risk does, and reports the JS heap allocated per price, the
 * scavenges and their pauses, the bytes each scavenge kept alive, and how many of the slowest 1% of
 * prices overlapped a GC pause.
 *   node dist/bench/risk-gc.js [--device sim|cpu|cuda|webgpu] [--runs R] [--paths N] [--kernel-us U]
 * `sim` (the default) is a simulated GPU that computes nothing and finishes each task on the next turn
 * of the event loop, reporting --kernel-us as its duration, so what is measured is the runtime's and
 * the workload's own host work — what a GPU price costs on the main thread, on a machine without one.
 */
import { intOption, parse } from '../src/cli/output.js';
import { Runtime, simBackend } from 'tandem';
import { risk } from 'tandem/workloads';

const { priceOption } = risk;
import { gcLine, slowWithGc, watchGc } from './gc-watch.js';
import { quantile } from './quantile.js';

const { values } = parse(process.argv.slice(2), {
  device: { type: 'string', default: 'sim' },
  runs: { type: 'string' },
  paths: { type: 'string' },
  'kernel-us': { type: 'string' },
  spread: { type: 'boolean' },
});
const device = values['device'] as string;
const runs = intOption(values['runs'], 'runs', 1000, 1, 1e7);
const paths = intOption(values['paths'], 'paths', 1_000_000, 1, 2 ** 40);
const kernelUs = intOption(values['kernel-us'], 'kernel-us', 50, 0, 1e6);

const sim = device === 'sim';
const rt = await Runtime.create({
  backends: [
    sim
      ? simBackend({
          devices: [{ id: 'gpu0', type: 'gpu', opUs: { mc_european: kernelUs } }],
          compute: false,
        })
      : device,
  ],
  calibrate: false,
  ...(process.env.TANDEM_CACHE_DIR ? { cacheDir: process.env.TANDEM_CACHE_DIR } : {}),
});
if (rt.devices.length === 0) {
  console.error(`${device} unavailable: ${rt.backends.map((b) => b.reason ?? '').join('; ')}`);
  process.exit(2);
}
const base = {
  spot: 100,
  strike: 100,
  rate: 0.05,
  vol: 0.2,
  maturity: 1,
  paths,
  device: sim ? 'auto' : device,
};
// Each price's parameters as a fresh literal. --spread builds them as `{ ...base, seed }` instead, as
// bench/risk did: on Node 20 that pattern alone (spread first, then a property added) makes every
// scavenge keep and promote ~60 KiB of dead objects (bench/gc-watch.ts measures it; a plain literal,
// `{ ...base }` or Object.assign do not), which is the caller's garbage, not the runtime's.
const spread = values['spread'] === true;
const params = (seed: number): Record<string, unknown> =>
  spread
    ? { ...base, seed }
    : {
        spot: base.spot,
        strike: base.strike,
        rate: base.rate,
        vol: base.vol,
        maturity: base.maturity,
        paths: base.paths,
        device: base.device,
        seed,
      };
// Warm-up: the JIT, the performance model's history and every pool reach their steady state.
for (let k = 0; k < Math.min(runs, 300); k++) await priceOption(rt, params(k));
const spans: Array<[number, number]> = [];
const gc = watchGc();
let check = 0;
for (let k = 0; k < runs; k++) {
  const t0 = performance.now();
  const r = await priceOption(rt, params(k));
  spans.push([t0, performance.now()]);
  check += r.price;
}
const s = gc.stop();
const lat = spans.map(([a, b]) => b - a).sort((a, b) => a - b);
const q = (p: number): number => quantile(lat, p);
const worst = Math.max(1, Math.round(runs / 100));
console.log(`device ${rt.devices.map((d) => d.info.name).join(', ')}; node ${process.version}`);
console.log(
  `${paths}-path price over ${runs} runs: p50 ${q(0.5).toFixed(3)} ms, p99 ${q(0.99).toFixed(3)} ms, max ${lat[lat.length - 1]!.toFixed(3)} ms${sim ? '' : `; sum of prices ${check.toFixed(6)}`}`,
);
console.log(`gc during the runs: ${gcLine(s, runs)}`);
console.log(`slowest ${worst} runs overlapping a GC pause: ${slowWithGc(spans, s.pauses, worst)}`);
await rt.close();
