/**
 * LJ molecular dynamics throughput (atom-steps per second) through the runtime, beside the plain
 * TypeScript engine on the main thread (CPU) — the in.lj problem scaled by atom count.
 *   node dist/bench/md.js [--device cpu|cuda|webgpu] [--atoms 32000,1000000] [--steps 100] [--json out.json]
 * Defaults: cpu → 32,000 atoms; cuda → 32,000, 1M, 4M and 16M atoms (f32). A 10-step run first
 * warms up (NVRTC compile, workers); the loop time excludes setup (lattice, velocities, upload).
 */
import { writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { intOption, parse } from '../src/cli/output.js';
import { Runtime } from 'tandem';
import { md } from 'tandem/workloads';

const { runMd, runLocal, validateMdParams } = md;
type MdResult = md.MdResult;

// --json names the file to write (not the CLI's boolean --json).
const { values } = parse(process.argv.slice(2), {
  device: { type: 'string', default: 'cpu' },
  atoms: { type: 'string' },
  steps: { type: 'string' },
  json: { type: 'string' },
});
const device = values['device'] as 'cpu' | 'cuda' | 'webgpu';
const steps = intOption(values['steps'], 'steps', 100);
const sizes = String(values['atoms'] ?? (device === 'cpu' ? '32000' : '32000,1000000,4000000,16000000'))
  .split(',')
  .map(Number);
const json = values['json'] as string | undefined;

interface Row {
  atoms: number;
  device: string;
  precision: string;
  steps: number;
  seconds: number;
  atomStepsPerSecond: number;
  temp: number;
  epair: number;
  toteng: number;
  baseline?: { what: string; atomStepsPerSecond: number };
}

const rt = await Runtime.create({
  // WebGPU runs build the neighbour list on the CPU.
  backends: device === 'webgpu' ? ['cpu', 'webgpu'] : [device],
  calibrate: false,
  ...(process.env.TANDEM_CACHE_DIR ? { cacheDir: process.env.TANDEM_CACHE_DIR } : {}),
});
const status = rt.backends.find((b) => b.kind === device);
if (!status?.available) {
  console.error(`${device} unavailable: ${status?.reason ?? 'not opened'}`);
  process.exit(2);
}
const rows: Row[] = [];
console.log(
  `device ${rt.devices.map((d) => d.info.name).join(', ')}; node ${process.version}; ${cpus().length} CPUs (${cpus()[0]?.model ?? '?'})`,
);
// One short run first: NVRTC compiles (or loads from the disk cache) and the workers warm up.
await runMd(rt, { preset: 'lammps-lj', steps: 10, thermoEvery: 10, device });
for (const atoms of sizes) {
  const params = { preset: 'lammps-lj', atoms, steps, thermoEvery: steps, device };
  const r: MdResult = await runMd(rt, params);
  const last = r.thermo[r.thermo.length - 1]!;
  const row: Row = {
    atoms: r.atoms,
    device: r.device,
    precision: r.precision,
    steps,
    seconds: r.seconds,
    atomStepsPerSecond: r.atomStepsPerSecond,
    temp: last.temp,
    epair: last.epair,
    toteng: last.toteng,
  };
  if (device === 'cpu') {
    const cfg = validateMdParams(params);
    const t0 = performance.now();
    runLocal(cfg);
    const s = (performance.now() - t0) / 1000;
    row.baseline = { what: 'plain TS engine, main thread', atomStepsPerSecond: (r.atoms * steps) / s };
  }
  rows.push(row);
}
console.log(
  '| atoms | device | precision | steps | loop s | atom-steps/s | T(last) | E_pair(last) | baseline atom-steps/s | ratio |',
);
console.log('| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
for (const r of rows) {
  const b = r.baseline?.atomStepsPerSecond;
  console.log(
    `| ${r.atoms} | ${r.device} | ${r.precision} | ${r.steps} | ${r.seconds.toFixed(3)} | ${r.atomStepsPerSecond.toExponential(3)} | ${r.temp.toFixed(5)} | ${r.epair.toFixed(5)} | ${b ? b.toExponential(3) : '-'} | ${b ? (r.atomStepsPerSecond / b).toFixed(2) : '-'} |`,
  );
}
if (json) writeFileSync(json, JSON.stringify({ device, steps, rows }, null, 2));
await rt.close();
