/**
 * `tandem run md | option | var`: the workload libraries on a local runtime. Flags map onto the
 * workloads' JSON parameters (kebab-case → camelCase; numbers and booleans parsed), so the CLI, the
 * service's job types and the library take the same parameters and give the same errors.
 */
import { readFileSync } from 'node:fs';
import { TandemError } from '../core/errors.js';
import { WORKLOAD_JOB_TYPES } from '../workloads/index.js';
import type { ThermoRow } from '../workloads/md/thermo.js';
import { openRuntime } from './runtime-commands.js';
import { print, table, type Command } from './output.js';

/** Parses `--key value` pairs (and bare `--flag`) into workload parameters. */
export function flagsToParams(argv: readonly string[]): { params: Record<string, unknown>; json: boolean } {
  const params: Record<string, unknown> = {};
  let json = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--json') {
      json = true;
      continue;
    }
    if (!a.startsWith('--') || a.length < 3)
      throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', `unexpected argument ${JSON.stringify(a)}`);
    const key = a.slice(2).replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
    const next = argv[i + 1];
    if (next === undefined || next.startsWith('--')) {
      params[key] = true;
      continue;
    }
    i++;
    params[key] =
      next === 'true'
        ? true
        : next === 'false'
          ? false
          : next.trim() !== '' && Number.isFinite(Number(next))
            ? Number(next)
            : next;
  }
  return { params, json };
}

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
    const result = (await type.run(rt, params)) as Record<string, unknown>;
    print(json, result, () => human(result));
    return 0;
  } finally {
    await rt.close();
  }
}

function keyValues(r: Record<string, unknown>): string {
  return Object.entries(r)
    .filter(([, v]) => typeof v !== 'object')
    .map(([k, v]) => `${k.padEnd(18)} ${typeof v === 'number' ? fmt(v) : String(v)}`)
    .join('\n');
}

export const runMdCommand: Command = (argv) => {
  const { params, json } = flagsToParams(argv);
  return runWorkload('md', params, json, (r) => {
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
};

export const runOptionCommand: Command = (argv) => {
  const { params, json } = flagsToParams(argv);
  return runWorkload('option', params, json, keyValues);
};

/** `--portfolio file.json` is read here; without it the example portfolio is used. */
export const runVarCommand: Command = (argv) => {
  const { params, json } = flagsToParams(argv);
  const path = params['portfolio'];
  if (path !== undefined) {
    if (typeof path !== 'string')
      throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', '--portfolio takes a JSON file path');
    try {
      params['portfolio'] = JSON.parse(readFileSync(path, 'utf8'));
    } catch (e) {
      throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', `--portfolio ${path}: ${(e as Error).message}`);
    }
  }
  return runWorkload('var', params, json, keyValues);
};
