/**
 * What a registration asks for and what it becomes: the request's shape, the default placement, the
 * weights a new version takes (an upload moved into place, or a finished train job's last checkpoint
 * copied, after checking the caller may use that job and that it trained this kind) and the index
 * entry built from them. Kept apart from repository.ts, which owns the versions in memory, because
 * these checks read only the request, the job table and the files on disk.
 */
import { copyFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { TandemError } from '../../core/errors.js';
import type { HardwareKind } from '../../devices/device.js';
import { latestCheckpoint } from '../../nn/checkpoint.js';
import type { Tenant } from '../auth/tenants.js';
import type { JobRecord } from '../store/job-store.js';
import { DEFAULT_BATCHING, type BatchingConfig } from './batcher.js';
import type { ModelFiles, Registration } from './model-files.js';
import type { ModelFactory, ModelPlacement } from './model.js';

export interface RegisterRequest {
  readonly name: string;
  readonly kind: string;
  readonly version?: number;
  readonly config?: Readonly<Record<string, unknown>>;
  readonly placement?: ModelPlacement;
  readonly batching?: Partial<BatchingConfig>;
  readonly warmup?: { readonly inputs: unknown; readonly requests?: number };
  readonly fromJob?: string;
  readonly upload?: string;
}

/** Where a train job's checkpoints are found (the repository's options satisfy it). */
export interface JobCheckpoints {
  readonly dataDir: string;
  /** A job by id (for registration from a train job's checkpoint). */
  readonly findJob: (id: string) => JobRecord | null;
}

/** Warm-up requests when a registration's warmup names inputs but no count. */
export const DEFAULT_WARMUP_REQUESTS = 200;

const DEFAULT_PLACEMENT: ModelPlacement = {
  kinds: ['cuda', 'webgpu', 'cpu'] as HardwareKind[],
  preferIdle: false,
};

/** The default placement, kept to the kinds the factory can run on. */
export function defaultPlacement(factory: ModelFactory): ModelPlacement {
  const only = factory.deviceKinds;
  return only === undefined
    ? DEFAULT_PLACEMENT
    : { ...DEFAULT_PLACEMENT, kinds: DEFAULT_PLACEMENT.kinds.filter((k) => only.includes(k)) };
}

/** The weights file for a new version (relative to the models directory), or null for built-in ones. */
export function takeWeights(
  files: ModelFiles,
  jobs: JobCheckpoints,
  caller: Tenant,
  r: RegisterRequest,
  version: number,
): string | null {
  if (r.upload !== undefined) {
    const from = files.uploadPath(r.upload);
    const rel = files.weightsFor(r.name, version, r.kind === 'onnx' ? 'onnx' : 'safetensors');
    try {
      renameSync(from, files.path(rel));
    } catch {
      throw new TandemError('TANDEM_ERR_NOT_FOUND', `no upload ${r.upload}`);
    }
    return rel;
  }
  if (r.fromJob === undefined) return null;
  const job = jobs.findJob(r.fromJob);
  if (!job || (job.tenantId !== caller.id && caller.role !== 'admin'))
    throw new TandemError('TANDEM_ERR_NOT_FOUND', `no job ${r.fromJob}`);
  if (job.type !== 'train')
    throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', `job ${r.fromJob} is a ${job.type} job, not train`);
  if (job.state !== 'succeeded' && job.state !== 'cancelled')
    throw new TandemError('TANDEM_ERR_NOT_READY', `job ${r.fromJob} is ${job.state}: it has not finished`);
  if (job.params['model'] !== r.kind)
    throw new TandemError(
      'TANDEM_ERR_BAD_CHECKPOINT',
      `job ${r.fromJob} trained a ${String(job.params['model'])} model, not ${r.kind}`,
    );
  const file = latestCheckpoint(join(jobs.dataDir, 'checkpoints', job.id));
  if (file === null) throw new TandemError('TANDEM_ERR_NOT_FOUND', `job ${r.fromJob} left no checkpoint`);
  // A copy: the job's own directory keeps only its newest checkpoints and may be cleaned up.
  const rel = files.weightsFor(r.name, version, 'safetensors');
  copyFileSync(file, files.path(rel));
  return rel;
}

/** The index entry of a new version: the request's settings over the defaults, owned by the caller. */
export function newRegistration(
  caller: Tenant,
  r: RegisterRequest,
  version: number,
  factory: ModelFactory,
  weights: string | null,
): Registration {
  return {
    name: r.name,
    version,
    kind: r.kind,
    config: r.config ?? {},
    placement: r.placement ?? defaultPlacement(factory),
    batching: cappedBatching({ ...DEFAULT_BATCHING, ...r.batching }, factory, r.config ?? {}),
    weights,
    ...(r.warmup
      ? { warmup: { inputs: r.warmup.inputs, requests: r.warmup.requests ?? DEFAULT_WARMUP_REQUESTS } }
      : {}),
    source:
      r.fromJob !== undefined ? { type: 'job', job: r.fromJob } : { type: r.upload ? 'upload' : 'builtin' },
    owner: caller.id,
    createdAt: Date.now(),
  };
}

function cappedBatching(
  b: BatchingConfig,
  factory: ModelFactory,
  config: Readonly<Record<string, unknown>>,
): BatchingConfig {
  const cap = factory.maxBatchSizeFor?.(config);
  return cap === undefined || cap >= b.maxBatchSize ? b : { ...b, maxBatchSize: Math.max(1, cap) };
}
