/**
 * `tandem models [--cache-dir DIR] [--op gemm] [--json]`: the performance models the runtime learned
 * (per kernel, data footprint and device: samples, median and spread, rejected outliers, achieved
 * rate) and the bus model (bandwidth and latency per pair of memory nodes), from the cache directory.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PerfModels } from '../runtime/perf-model.js';
import { loadModels, modelFile } from '../runtime/perf-model-store.js';
import { print, table, flops } from './output.js';

interface BusEntry {
  readonly pair: string;
  readonly bandwidth: number;
  readonly latencyUs: number;
}

function readBus(cacheDir: string): BusEntry[] {
  try {
    const parsed = JSON.parse(readFileSync(join(cacheDir, 'bus-model.json'), 'utf8')) as {
      links?: Record<string, { bandwidth: number; latencyUs: number }>;
    };
    return Object.entries(parsed.links ?? {}).map(([pair, l]) => ({
      pair,
      bandwidth: l.bandwidth,
      latencyUs: l.latencyUs,
    }));
  } catch {
    return [];
  }
}

export async function modelsCommand(opts: {
  readonly json?: boolean;
  readonly cacheDir?: string;
  readonly op?: string;
}): Promise<number> {
  const json = opts.json === true;
  const cacheDir = opts.cacheDir ?? join(process.cwd(), '.tandem', 'cache');
  const file = modelFile(cacheDir);
  const models = new PerfModels();
  const { warning } = loadModels(file, models);
  if (warning) process.stderr.write(`tandem: ${warning}\n`);
  const op = opts.op;
  const stats = models
    .stats()
    .filter((s) => !op || s.op === op)
    .sort((a, b) => a.op.localeCompare(b.op) || a.size - b.size || a.device.localeCompare(b.device));
  const bus = readBus(cacheDir);
  print(json, { file, models: stats, bus }, () => {
    if (stats.length === 0 && bus.length === 0)
      return `no models in ${file} yet: they are learned as tasks run (and saved when a runtime closes)`;
    const rows = [
      ['op', 'footprint', 'device', 'samples', 'median µs', 'MAD µs', 'rejected', 'rate'],
      ...stats.map((s) => [
        s.op,
        s.footprint.length > 40 ? `${s.footprint.slice(0, 37)}...` : s.footprint,
        s.device,
        String(s.samples),
        s.medianUs.toFixed(1),
        s.madUs.toFixed(1),
        `${s.rejected}/${s.total}`,
        s.medianUs > 0 ? flops((s.size / s.medianUs) * 1e6) : '-',
      ]),
    ];
    const busRows = [
      ['bus', 'GB/s', 'latency µs'],
      ...bus.map((b) => [b.pair, (b.bandwidth / 1e9).toFixed(2), b.latencyUs.toFixed(1)]),
    ];
    return `${file}\n${table(rows)}${bus.length ? `\n\n${table(busRows)}` : ''}`;
  });
  return 0;
}
