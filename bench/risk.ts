/**
 * Monte Carlo risk throughput and latency through the runtime: paths per second of a large European
 * price, and p50/p99 latency of a 10^6-path price end to end (submit, run, read back, estimate), with
 * PyTorch written the straightforward way (bench/py/risk_torch.py) in the same run when --torch.
 *   node dist/bench/risk.js [--device cpu|cuda|webgpu] [--paths N] [--runs R] [--p99-paths M] [--torch] [--json out.json]
 * Defaults: cpu → 2^22 paths, 20 latency runs; GPUs → 2^26 paths, 1000 latency runs of 10^6 paths.
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { Runtime } from '../src/runtime/runtime.js';
import { portfolioVar, priceOption } from '../src/workloads/risk/run.js';
import { EXAMPLE_PORTFOLIO } from '../src/workloads/risk/params.js';

const arg = (name: string, def: string): string => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1]! : def;
};
const device = arg('--device', 'cpu') as 'cpu' | 'cuda' | 'webgpu';
const gpu = device !== 'cpu';
const paths = Number(arg('--paths', gpu ? String(2 ** 26) : String(2 ** 22)));
const runs = Number(arg('--runs', gpu ? '1000' : '20'));
const p99Paths = Number(arg('--p99-paths', '1000000'));
const json = arg('--json', '');
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
const baseline = process.argv.includes('--torch') ? torch() : null;
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
const tput: Record<string, number> = {};
for (const antithetic of [false, true]) {
  await priceOption(rt, { ...base, paths: Math.min(paths, 1 << 20), antithetic });
  const times: number[] = [];
  let last = { price: 0, stdError: 0 };
  for (let k = 0; k < 5; k++) {
    const r = await priceOption(rt, { ...base, paths, antithetic, seed: 100 + k });
    times.push(r.seconds);
    last = r;
  }
  times.sort((a, b) => a - b);
  tput[antithetic ? 'antithetic' : 'plain'] = paths / times[2]!;
  console.log(
    `european ${antithetic ? 'antithetic' : 'plain'}: ${paths} paths, median ${(times[2]! * 1e3).toFixed(2)} ms, ${(paths / times[2]!).toExponential(3)} paths/s, price ${last.price.toFixed(5)} ± ${last.stdError.toExponential(2)}`,
  );
}
const asian = await priceOption(rt, {
  ...base,
  type: 'asian',
  steps: 64,
  paths: Math.max(2, Math.floor(paths / 64)),
});
console.log(
  `asian (64 dates): ${asian.paths} paths in ${(asian.seconds * 1e3).toFixed(2)} ms, ${(asian.paths / asian.seconds).toExponential(3)} paths/s, ${((asian.paths * 64) / asian.seconds).toExponential(3)} path-steps/s`,
);
const lat: number[] = [];
for (let k = 0; k < runs; k++) {
  const t0 = performance.now();
  await priceOption(rt, { ...base, paths: p99Paths, seed: k });
  lat.push(performance.now() - t0);
}
lat.sort((a, b) => a - b);
const q = (p: number): number => lat[Math.min(lat.length - 1, Math.ceil(p * lat.length) - 1)]!;
console.log(
  `${p99Paths}-path price end to end over ${runs} runs: p50 ${q(0.5).toFixed(3)} ms, p99 ${q(0.99).toFixed(3)} ms`,
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
  asian: { paths: asian.paths, seconds: asian.seconds },
  p50Ms: q(0.5),
  p99Ms: q(0.99),
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
  console.log(
    `| 1e6-path p99 ms | ${q(0.99).toFixed(3)} | ${baseline.p99Ms!.toFixed(3)} | ${(baseline.p99Ms! / q(0.99)).toFixed(2)} |`,
  );
}
if (json) writeFileSync(json, JSON.stringify(out, null, 2));
await rt.close();
