/**
 * One model version in memory — its registration, state, loaded model and batcher — and the two pure
 * reads the repository makes of its versions: which one a request goes to, and how the API describes
 * one. Kept apart from repository.ts so the routes' view of a version does not sit inside the code
 * that registers, loads and unloads them.
 */
import { messageText, TandemError } from '../../core/errors.js';
import type { BatchingConfig, DynamicBatcher } from './batcher.js';
import type { Registration } from './model-files.js';
import { ModelStats, type ModelStatsView } from './model-stats.js';
import type { ModelPlacement, ServedModel } from './model.js';

export type VersionState = 'registered' | 'loading' | 'ready' | 'failed';

/** One version as the API describes it. */
export interface VersionView {
  readonly name: string;
  readonly version: number;
  readonly kind: string;
  readonly state: VersionState;
  readonly error: { code: string; message: string } | null;
  readonly config: Readonly<Record<string, unknown>>;
  readonly placement: ModelPlacement;
  readonly batching: BatchingConfig;
  readonly weightBytes: number | null;
  /** Warm-up requests run before the version was ready (null: no warm-up registered). */
  readonly warmupRequests: number | null;
  readonly source: Registration['source'];
  readonly createdAt: string;
  readonly inputSchema: Readonly<Record<string, unknown>> | null;
  readonly outputSchema: Readonly<Record<string, unknown>> | null;
  readonly queued: number;
  readonly inFlight: number;
  readonly stats: ModelStatsView;
}

/** A version in memory: its registration and, once loaded, its model and batcher. */
export class ModelVersion {
  state: VersionState = 'registered';
  error: TandemError | null = null;
  model: ServedModel | null = null;
  batcher: DynamicBatcher<unknown, unknown> | null = null;
  loading: Promise<void> | null = null;
  readonly stats = new ModelStats();
  constructor(readonly reg: Registration) {}
}

/**
 * The version a request names (or the newest that has not failed) among a model's versions; throws
 * NOT_FOUND when the model has none or not that one.
 */
export function pickVersion(
  versions: ReadonlyMap<number, ModelVersion> | undefined,
  name: string,
  version: number | undefined,
): ModelVersion {
  if (!versions || versions.size === 0) throw new TandemError('TANDEM_ERR_NOT_FOUND', `no model ${name}`);
  let v: ModelVersion | undefined;
  if (version !== undefined) v = versions.get(version);
  else
    for (const x of versions.values())
      if (x.state !== 'failed' && (v === undefined || x.reg.version > v.reg.version)) v = x;
  if (!v)
    throw new TandemError(
      'TANDEM_ERR_NOT_FOUND',
      version === undefined
        ? `model ${name} has no version that loads`
        : `model ${name} has no version ${version}`,
    );
  return v;
}

/** A version as the API describes it: its registration, and its live figures once loaded. */
export function versionView(v: ModelVersion): VersionView {
  const r = v.reg;
  return {
    name: r.name,
    version: r.version,
    kind: r.kind,
    state: v.state,
    error: v.error ? { code: v.error.code, message: messageText(v.error) } : null,
    config: r.config,
    placement: r.placement,
    batching: v.batcher?.config ?? r.batching,
    weightBytes: v.model?.weightBytes ?? null,
    warmupRequests: r.warmup?.requests ?? null,
    source: r.source,
    createdAt: new Date(r.createdAt).toISOString(),
    inputSchema: v.model?.inputSchema ?? null,
    outputSchema: v.model?.outputSchema ?? null,
    queued: v.batcher?.queued ?? 0,
    inFlight: v.batcher?.inFlightItems ?? 0,
    stats: v.stats.view(),
  };
}
