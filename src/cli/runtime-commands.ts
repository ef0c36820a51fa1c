/** CLI commands that drive a local runtime: devices, run gemm, demo. */
import type { DType } from '../core/dtype.js';
import { formatBytes } from '../core/errors.js';
import { TraceRecorder } from '../obs/trace.js';
import { Runtime } from '../runtime/runtime.js';
import { checkGemmRows, randomData } from './gemm-check.js';
import { flops, outputFile, print, table } from './output.js';
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

export interface DevicesOptions {
  readonly json?: boolean;
  /** Comma-separated kinds (checked by the parser). */
  readonly backends?: string;
  readonly calibrate: boolean;
}

export async function devicesCommand(opts: DevicesOptions): Promise<number> {
  const backends = opts.backends?.split(',');
  // The table below is the summary: nothing else on stderr.
  const rt = await openRuntime({
    ...(backends ? { backends } : {}),
    calibrate: opts.calibrate,
    summary: false,
  });
  try {
    const data = rt.backends.map((b) => ({
      backend: b.kind,
      available: b.available,
      ...(b.reason ? { reason: b.reason } : {}),
      devices: b.devices.map((d) => d.info),
    }));
    print(opts.json === true, data, () => {
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
}

export interface GemmOptions {
  readonly json?: boolean;
  readonly n: number;
  readonly dtype: DType;
  readonly reps: number;
  /** A kind or a device id (checked by the parser). */
  readonly device?: string;
  readonly precision: 'default' | 'tf32';
  /** A file, or true for .tandem/traces/gemm-<time>.trace.json. */
  readonly trace?: string | true;
}

export async function runGemmCommand(opts: GemmOptions): Promise<number> {
  const { n, dtype, reps, device, precision } = opts;
  const backends = device ? ['cpu', device.replace(/\d+$/, '')] : undefined;
  // Where the trace goes is settled (and its folder made) before any device opens.
  const traceFile =
    opts.trace === undefined
      ? null
      : outputFile(opts.trace === true ? undefined : opts.trace, `gemm-${Date.now()}.trace.json`);
  const rt = await openRuntime({ ...(backends ? { backends: [...new Set(backends)] } : {}) });
  const trace = traceFile ? new TraceRecorder() : null;
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
    if (trace && traceFile) trace.writeFile(traceFile);
    const result = {
      op: 'gemm',
      n,
      dtype,
      precision,
      device: first.deviceId,
      medianSeconds: median,
      flopsPerSecond: rate,
      check,
      ...(traceFile ? { trace: traceFile } : {}),
    };
    print(opts.json === true, result, () =>
      [
        `gemm ${n}x${n}x${n} ${dtype}${precision !== 'default' ? ` (${precision})` : ''} on ${first.deviceId}: ${(median * 1e3).toFixed(2)} ms median of ${reps}, ${flops(rate)}`,
        `check: max relative error ${check.maxRelError.toExponential(2)} over ${check.rowsChecked} rows (tolerance ${check.tolerance.toExponential(2)}) ${check.ok ? 'OK' : 'FAILED'}`,
        ...(traceFile ? [`trace written to ${traceFile} (open in https://ui.perfetto.dev)`] : []),
      ].join('\n'),
    );
    return check.ok ? 0 : 1;
  } finally {
    await rt.close();
  }
}

export async function demoCommand(opts: { readonly json?: boolean }): Promise<number> {
  process.stdout.write('Tandem demo: devices, then a checked GEMM through the runtime.\n\n');
  await devicesCommand({ json: opts.json === true, calibrate: true });
  process.stdout.write('\n');
  return runGemmCommand({ json: opts.json === true, n: 1024, dtype: 'f32', reps: 3, precision: 'default' });
}
