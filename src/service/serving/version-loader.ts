/**
 * Loading one model version onto the runtime: its factory builds the model, a dynamic batcher is put
 * in front of it (capped at the model's own largest batch, each batch placed by the version's rule),
 * and a failure becomes the version's error instead of an exception, so one bad weights file marks
 * that version failed and the others keep serving. Kept apart from repository.ts because it needs
 * only the version, its factory and the lane's shared pieces, never the table of versions.
 */
import { messageText, TandemError, withPathHidden } from '../../core/errors.js';
import type { ServiceRuntime } from '../jobs/job-type.js';
import { DynamicBatcher } from './batcher.js';
import type { ServingMetrics } from './metrics.js';
import type { ModelFiles, ModelWarmup } from './model-files.js';
import type { ModelVersion } from './model-version.js';
import type { ModelFactory, ServedModel } from './model.js';
import { requirePlacement, type JobDeviceUse } from './placement.js';

/** What every load shares: the weights on disk, the devices jobs use, the metrics and the log. */
export interface LoadContext {
  readonly files: ModelFiles;
  readonly use: JobDeviceUse;
  readonly metrics: ServingMetrics | null;
  readonly log?: (level: 'info' | 'warn' | 'error', msg: string) => void;
}

/** Loads `v` with `factory` onto `rt`: ready with its model and batcher, or failed with its error. */
export async function loadVersion(
  v: ModelVersion,
  factory: ModelFactory,
  rt: ServiceRuntime,
  ctx: LoadContext,
): Promise<void> {
  const reg = v.reg;
  v.state = 'loading';
  try {
    requirePlacement(reg.placement, rt, null);
    const model = await factory.create(
      {
        name: reg.name,
        version: reg.version,
        kind: reg.kind,
        config: reg.config,
        placement: reg.placement,
        ...(reg.weights === null ? {} : { weightsPath: ctx.files.path(reg.weights) }),
      },
      rt,
    );
    const cfg = { ...reg.batching, maxBatchSize: Math.min(reg.batching.maxBatchSize, model.maxBatchSize) };
    const tags = { model: reg.name, version: String(reg.version) };
    const batcher = new DynamicBatcher<unknown, unknown>(cfg, (items, id) =>
      model.runBatch(items, {
        rt,
        device: requirePlacement(reg.placement, rt, ctx.use),
        tags: { ...tags, batch: String(id) },
      }),
    );
    try {
      if (reg.warmup) await warmUp(model, batcher, reg.warmup, cfg.maxBatchSize);
    } catch (e) {
      await batcher.close(new TandemError('TANDEM_ERR_CANCELLED', 'warm-up failed'));
      await model.unload();
      throw e;
    }
    // Registered after the warm-up: its batches are not the clients' and stay out of stats and metrics.
    batcher.onBatch((size, computeUs) => {
      v.stats.batch(size);
      ctx.metrics?.batch(reg.name, reg.version, size, computeUs);
    });
    v.model = model;
    v.batcher = batcher;
    v.state = 'ready';
  } catch (e) {
    v.state = 'failed';
    // A RangeError is a size the host cannot allocate (a config's dims, not its weights file).
    const err =
      e instanceof TandemError
        ? e
        : e instanceof RangeError
          ? new TandemError('TANDEM_ERR_LIMIT', `loading ${reg.name} v${reg.version}: ${e.message}`)
          : new TandemError('TANDEM_ERR_BAD_CHECKPOINT', `loading ${reg.name} v${reg.version}: ${String(e)}`);
    ctx.log?.('warn', `model ${reg.name} v${reg.version}: ${err.message}`);
    v.error =
      reg.weights === null
        ? err
        : withPathHidden(err, ctx.files.path(reg.weights), `the weights of ${reg.name} v${reg.version}`);
  }
}

/** Longest a warm-up issues single requests (the full batch after them still runs). */
export const WARMUP_MAX_MS = 5000;

/**
 * Runs a registration's warm-up through the version's own batcher (its queue, batching and the model's
 * runBatch, the path a client's request takes): `requests` single requests one after another (for at
 * most WARMUP_MAX_MS), then one batch of the largest size. Inputs the model refuses, or an item that fails, fail the load with a
 * TandemError naming the warm-up (same code as the cause).
 */
async function warmUp(
  model: ServedModel,
  batcher: DynamicBatcher<unknown, unknown>,
  w: ModelWarmup,
  maxBatchSize: number,
): Promise<void> {
  const fail = (e: unknown): TandemError =>
    e instanceof TandemError
      ? new TandemError(e.code, `warmup: ${messageText(e)}`, e.details, { cause: e })
      : new TandemError('TANDEM_ERR_INVALID_ARGUMENT', `warmup: ${String(e)}`);
  let item: unknown;
  try {
    item = model.parse(w.inputs);
  } catch (e) {
    throw fail(e);
  }
  const one = async (): Promise<void> => {
    const out = await batcher.submit(item).promise;
    if (out.error !== undefined) throw fail(out.error);
  };
  // A time bound as well as a count: a registration must not hold the devices (for every tenant) for
  // as long as 100,000 of the largest requests a model accepts would take.
  const until = performance.now() + WARMUP_MAX_MS;
  for (let i = 0; i < w.requests && performance.now() < until; i++) await one();
  await Promise.all(Array.from({ length: maxBatchSize }, one));
}
