/** CLI commands that drive a local runtime: devices, run gemm, demo. */
import { resolve } from 'node:path';
import { assertDType } from '../core/dtype.js';
import { formatBytes } from '../core/errors.js';
import { TraceRecorder } from '../obs/trace.js';
import { Runtime } from '../runtime/runtime.js';
import { checkGemmRows, randomData } from './gemm-check.js';
import { flops, intOption, parse, print, table, type Command } from './output.js';
import { logLevelFrom, printBackendSummary, runtimeLoggers } from './runtime-log.js';

export async function openRuntime(
  opts: { backends?: string[]; scheduler?: string; calibrate?: boolean; summary?: boolean } = {},
): Promise<Runtime> {
  const { log, debug } = runtimeLoggers(logLevelFrom(process.env));
  const rt = await Runtime.create({
    ...(opts.backends ? { backends: opts.backends } : {}),
    ...(opts.scheduler ? { scheduler: opts.scheduler } : {}),
    calibrate: opts.calibrate ?? true,
    log,
    debug,
  });
  if (opts.summary !== false) printBackendSummary(rt, log);
  return rt;
}

function backendList(v: unknown): string[] | undefined {
  return typeof v === 'string' ? v.split(',').map((s) => s.trim()) : undefined;
}

export const devicesCommand: Command = async (argv) => {
  const { values } = parse(argv, { backends: { type: 'string' }, 'no-calibrate': { type: 'boolean' } });
  const backends = backendList(values['backends']);
  // The table below is the summary: nothing else on stderr.
  const rt = await openRuntime({
    ...(backends ? { backends } : {}),
    calibrate: !values['no-calibrate'],
    summary: false,
  });
  try {
    const data = rt.backends.map((b) => ({
      backend: b.kind,
      available: b.available,
      ...(b.reason ? { reason: b.reason } : {}),
      devices: b.devices.map((d) => d.info),
    }));
    print(!!values['json'], data, () => {
      const rows: string[][] = [['BACKEND', 'DEVICE', 'NAME', 'MEMORY', 'PEAK', 'BANDWIDTH', 'STATUS']];
      for (const b of rt.backends) {
        if (!b.available) {
          rows.push([b.kind, '-', '-', '-', '-', '-', `unavailable: ${b.reason ?? 'unknown'}`]);
          continue;
        }
        for (const d of b.devices) {
          const i = d.info;
          const peak = Object.entries(i.peakFlops)
            .map(([dt, r]) => `${dt} ${flops(r!)}`)
            .join(', ');
          rows.push([
            b.kind,
            i.id,
            i.name,
            formatBytes(i.memoryBytes),
            peak || 'not measured',
            i.memoryBandwidth ? `${(i.memoryBandwidth / 1e9).toFixed(1)} GB/s` : '-',
            'available',
          ]);
        }
      }
      return table(rows);
    });
  } finally {
    await rt.close();
  }
  return 0;
};

export const runGemmCommand: Command = async (argv) => {
  const { values } = parse(argv, {
    n: { type: 'string' },
    dtype: { type: 'string' },
    device: { type: 'string' },
    reps: { type: 'string' },
    precision: { type: 'string' },
    trace: { type: 'string' },
  });
  const n = intOption(values['n'], 'n', 1024, 1, 65536);
  const dtype = assertDType(values['dtype'] ?? 'f32');
  const reps = intOption(values['reps'], 'reps', 3, 1, 1000);
  const device = values['device'] as string | undefined;
  const precision = (values['precision'] as string | undefined) ?? 'default';
  const backends = device ? ['cpu', device.replace(/\d+$/, '')] : undefined;
  const rt = await openRuntime({ ...(backends ? { backends: [...new Set(backends)] } : {}) });
  const trace = values['trace'] ? new TraceRecorder() : null;
  if (trace) rt.addObserver(trace);
  try {
    const a = rt.tensor([n, n], dtype, randomData(dtype, n * n, 1));
    const b = rt.tensor([n, n], dtype, randomData(dtype, n * n, 2));
    const c = rt.tensor([n, n], dtype);
    const submit = () =>
      rt.submit({
        kernel: 'gemm',
        args: { a, b, c },
        scalars: { alpha: 1, beta: 0, precision },
        ...(device ? { device } : {}),
        name: `gemm ${n}`,
      });
    const first = submit();
    await first.done; // warm-up: brings the operands to the device
    const times: number[] = [];
    for (let r = 0; r < reps; r++) {
      const t0 = performance.now();
      await submit().done;
      times.push((performance.now() - t0) / 1000);
    }
    const out = await rt.read(c);
    const check = checkGemmRows(dtype, n, n, n, await rt.read(a), await rt.read(b), out, 8, precision);
    times.sort((x, y) => x - y);
    const median = times[Math.floor(times.length / 2)]!;
    const rate = (2 * n ** 3) / median;
    if (trace) trace.writeFile(resolve(String(values['trace'])));
    const result = {
      op: 'gemm',
      n,
      dtype,
      precision,
      device: first.deviceId,
      medianSeconds: median,
      flopsPerSecond: rate,
      check,
      ...(values['trace'] ? { trace: resolve(String(values['trace'])) } : {}),
    };
    print(!!values['json'], result, () =>
      [
        `gemm ${n}x${n}x${n} ${dtype}${precision !== 'default' ? ` (${precision})` : ''} on ${first.deviceId}: ${(median * 1e3).toFixed(2)} ms median of ${reps}, ${flops(rate)}`,
        `check: max relative error ${check.maxRelError.toExponential(2)} over ${check.rowsChecked} rows (tolerance ${check.tolerance.toExponential(2)}) ${check.ok ? 'OK' : 'FAILED'}`,
        ...(values['trace']
          ? [`trace written to ${resolve(String(values['trace']))} (open in https://ui.perfetto.dev)`]
          : []),
      ].join('\n'),
    );
    return check.ok ? 0 : 1;
  } finally {
    await rt.close();
  }
};

export const demoCommand: Command = async (argv) => {
  const { values } = parse(argv, {});
  process.stdout.write('Tandem demo: devices, then a checked GEMM through the runtime.\n\n');
  await devicesCommand(values['json'] ? ['--json'] : []);
  process.stdout.write('\n');
  return runGemmCommand(['--n', '1024', ...(values['json'] ? ['--json'] : [])]);
};
