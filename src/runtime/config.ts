/** Runtime configuration: parsed and validated once, then passed down. */
import { join } from 'node:path';
import { TandemError } from '../core/errors.js';
import { HARDWARE_KINDS, type Backend } from '../devices/device.js';
import type { SchedulerPolicy } from './policies/policy.js';

export interface RuntimeConfig {
  /** Built-in backend kinds to try ('cpu', 'cuda', 'webgpu') or Backend objects (simulated devices). */
  readonly backends?: ReadonlyArray<string | Backend>;
  readonly scheduler?: string | SchedulerPolicy;
  /** Where calibration figures and compiled programs are cached. */
  readonly cacheDir?: string;
  /** Run calibrations that are not cached yet (default true). */
  readonly calibrate?: boolean;
  /** Per memory node budget in bytes, by node name ('host', 'cuda0', ...). */
  readonly memoryBudget?: Readonly<Record<string, number>>;
  /** Backend options by kind: { cpu: { threads: 2 }, cuda: {...}, webgpu: {...} }. */
  readonly options?: Readonly<Record<string, unknown>>;
  readonly log?: (msg: string) => void;
  /** Debug detail (drivers' and Dawn's start-up warnings); default: dropped. */
  readonly debug?: (msg: string) => void;
}

export interface ResolvedConfig {
  readonly backends: ReadonlyArray<string | Backend>;
  readonly scheduler: string | SchedulerPolicy | undefined;
  readonly cacheDir: string;
  readonly calibrate: boolean;
  readonly memoryBudget: Readonly<Record<string, number>>;
  readonly options: Readonly<Record<string, unknown>>;
  readonly log: (msg: string) => void;
  readonly debug: (msg: string) => void;
}

export function resolveConfig(config: RuntimeConfig = {}): ResolvedConfig {
  if (config === null || typeof config !== 'object')
    throw new TandemError('TANDEM_ERR_CONFIG', 'runtime config must be an object');
  const backends = config.backends ?? [...HARDWARE_KINDS];
  if (!Array.isArray(backends)) throw new TandemError('TANDEM_ERR_CONFIG', 'backends must be an array');
  for (const b of backends) {
    if (typeof b !== 'string' && (typeof b !== 'object' || typeof (b as Backend).open !== 'function')) {
      throw new TandemError('TANDEM_ERR_CONFIG', 'each backend must be a kind name or a Backend object');
    }
  }
  const budget = config.memoryBudget ?? {};
  for (const [k, v] of Object.entries(budget)) {
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) {
      throw new TandemError('TANDEM_ERR_CONFIG', `memoryBudget.${k} must be a non-negative number of bytes`);
    }
  }
  return {
    backends,
    scheduler: config.scheduler,
    cacheDir: config.cacheDir ?? join(process.cwd(), '.tandem', 'cache'),
    calibrate: config.calibrate ?? true,
    memoryBudget: budget,
    options: config.options ?? {},
    log: config.log ?? ((m) => process.stderr.write(`[tandem] ${m}\n`)),
    debug: config.debug ?? ((): void => {}),
  };
}
