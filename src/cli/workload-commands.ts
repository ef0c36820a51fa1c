/**
 * `tandem run md | option | var`: the workload libraries on a local runtime. The flags (workload-flags.ts)
 * map onto the workloads' JSON parameters, so the CLI, the service's job types and the library take the
 * same parameters and give the same errors. A bar shows progress on a terminal (progress.ts).
 */
import { readFileSync } from 'node:fs';
import { TandemError } from '../core/errors.js';
import { EXAMPLE_PORTFOLIO, WORKLOAD_JOB_TYPES } from '../workloads/index.js';
import { validateMdParams } from '../workloads/md/params.js';
import type { ThermoRow } from '../workloads/md/thermo.js';
import { openRuntime } from './runtime-commands.js';
import { print, table } from './output.js';
import { withProgress, workloadProgress, type Progress } from './progress.js';
import { workloadParams } from './workload-flags.js';

/** The options commander parsed for one `run` subcommand (flags in camelCase, plus --json). */
export type WorkloadOptions = Readonly<Record<string, unknown>> & { readonly json?: boolean };

function fmt(x: number): string {
  return Number.isInteger(x) ? String(x) : Number(x.toPrecision(8)).toString();
}

async function runWorkload(
  name: 'md' | 'option' | 'var',
  params: Record<string, unknown>,
  json: boolean,
  human: (r: Record<string, unknown>) => string,
): Promise<number> {
  const type = WORKLOAD_JOB_TYPES[name];
  type.validate(params); // before any device opens
  const device =
    typeof params['device'] === 'string' && params['device'] !== 'auto'
      ? String(params['device'])
      : undefined;
  const rt = await openRuntime({ ...(device ? { backends: [...new Set(['cpu', device])] } : {}) });
  try {
    const result = await withProgress(`${name}`, { json }, async (bar) => {
      // md reports its thermo steps; the Monte Carlo runs submit all their tasks at once, so the
      // runtime's count of finished tasks measures them.
      const steps = name === 'md' ? validateMdParams(params).steps : 0;
      const progress = workloadProgress(() => rt.pendingTasks, bar);
      if (name !== 'md') rt.addObserver(progress.observer);
      // A workload that counts its own steps or tasks reports them through `onProgress` (a run option
      // newer workloads take; one that does not ignores it and the task estimate stands).
      // The tags label the run's tasks in a trace or a metric as this command's.
      const runOptions = { tags: { cli: `run ${name}` }, onProgress: progress.onProgress };
      try {
        return (await type.run(rt, params, (row) => mdStep(row, steps, bar), runOptions)) as Record<
          string,
          unknown
        >;
      } finally {
        if (name !== 'md') rt.removeObserver(progress.observer);
      }
    });
    print(json, result, () => human(result));
    return 0;
  } finally {
    await rt.close();
  }
}

/** A thermo row of an md run as a fraction of its steps (the preset's when --steps is not given). */
function mdStep(row: Record<string, unknown>, steps: number, bar: Progress): void {
  const step = Number(row['step'] ?? row['Step']);
  if (steps > 0 && Number.isFinite(step)) bar.update(step / steps, `step ${step}/${steps}`);
  else if (Number.isFinite(step)) bar.update(0, `step ${step}`);
}

function keyValues(r: Record<string, unknown>): string {
  return Object.entries(r)
    .filter(([, v]) => typeof v !== 'object')
    .map(([k, v]) => `${k.padEnd(18)} ${typeof v === 'number' ? fmt(v) : String(v)}`)
    .join('\n');
}

export function runMdCommand(opts: WorkloadOptions): Promise<number> {
  return runWorkload('md', workloadParams('md', opts), opts.json === true, (r) => {
    const rows = (r['thermo'] as ThermoRow[]).map((t) =>
      [t.step, t.temp, t.epair, t.emol, t.toteng, t.press].map(fmt),
    );
    const drift = r['energyDrift'] as { relative: number };
    return [
      `Lennard-Jones MD: ${String(r['atoms'])} atoms, ${String(r['steps'])} steps on ${String(r['device'])} (${String(r['precision'])})`,
      table([['Step', 'Temp', 'E_pair', 'E_mol', 'TotEng', 'Press'], ...rows]),
      `Loop time ${(r['seconds'] as number).toFixed(3)} s: ${(r['atomStepsPerSecond'] as number).toExponential(3)} atom-steps/s; ` +
        `energy drift ${drift.relative.toExponential(2)} (relative)`,
    ].join('\n');
  });
}

export function runOptionCommand(opts: WorkloadOptions): Promise<number> {
  return runWorkload('option', workloadParams('option', opts), opts.json === true, keyValues);
}

/** `--portfolio file.json` is read here; without it the example portfolio (EXAMPLE_PORTFOLIO) is used. */
export function runVarCommand(opts: WorkloadOptions): Promise<number> {
  const params = workloadParams('var', opts);
  const path = params['portfolio'];
  if (path === undefined) params['portfolio'] = EXAMPLE_PORTFOLIO;
  else {
    try {
      params['portfolio'] = JSON.parse(readFileSync(String(path), 'utf8'));
    } catch (e) {
      throw new TandemError(
        'TANDEM_ERR_INVALID_ARGUMENT',
        `--portfolio ${String(path)}: ${(e as Error).message}`,
      );
    }
  }
  return runWorkload('var', params, opts.json === true, keyValues);
}
