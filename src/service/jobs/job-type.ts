/**
 * What a job type is: a name, a parameter schema with limits, a memory footprint estimate (for quota
 * and admission), a job class (for hardware selection) and `run`, which expands the job into tasks on
 * the runtime. The registry is open: workloads add types through the same interface.
 */
import { TandemError } from '../../core/errors.js';
import type { Runtime } from '../../runtime/runtime.js';

/** The part of the runtime a job may use (the documented API in docs/runtime-api.md). */
export type ServiceRuntime = Pick<
  Runtime,
  | 'tensor'
  | 'submit'
  | 'submitSequence'
  | 'prepareSequence'
  | 'submitPrepared'
  | 'read'
  | 'write'
  | 'free'
  | 'devices'
  | 'backends'
  | 'registerKernel'
  | 'memoryUsage'
  | 'canRun'
>;

/** Where the operator's hardware rules want the job's tasks to run. */
export interface Placement {
  /** Passed as `device` on rt.submit: a kind or a device id; undefined lets the scheduler choose. */
  readonly device: string | undefined;
  /** Why (shown in the job trace and status). */
  readonly reason: string;
}

export interface JobContext<P> {
  readonly jobId: string;
  readonly tenantId: string;
  readonly attempt: number;
  readonly params: P;
  /** Aborted when the job is cancelled (or the service shuts down): stop submitting and throw. */
  readonly signal: AbortSignal;
  /**
   * `signal.aborted` without making the signal (the service makes it on first use: an AbortSignal costs
   * several µs on a job's path); a job that only checks for a cancel at its end reads this.
   */
  readonly aborted?: boolean;
  /** null when no runtime could be opened; jobs that need one fail with TANDEM_ERR_DEVICE_UNAVAILABLE. */
  readonly rt: ServiceRuntime | null;
  readonly placement: Placement;
  /** Labels to put on every rt.submit so the job's trace and metrics find its tasks. */
  readonly tags: Readonly<Record<string, string>>;
  /** fraction in [0, 1]; persisted at most a few times a second. */
  progress(fraction: number, message?: string): void;
  /** Adds a span to the job's timeline (e.g. the reference check), in epoch microseconds. */
  span(name: string, startUs: number, endUs: number, args?: Record<string, unknown>): void;
  /** A training job's finished step, exported as Prometheus metrics (absent where none are kept). */
  trainingStep?(s: TrainingStepReport): void;
}

export interface TrainingStepReport {
  readonly model: string;
  readonly step: number;
  readonly loss: number;
  readonly seconds: number;
  /** Tokens or samples a second, in `unit`. */
  readonly throughput: number;
  readonly unit: string;
}

/** JSON Schema (draft-07 subset Fastify/ajv understands) for a job type's parameters. */
export type JsonSchema = Readonly<Record<string, unknown>>;

export interface JobType<P = Readonly<Record<string, unknown>>> {
  readonly name: string;
  readonly description: string;
  readonly paramsSchema: JsonSchema;
  /** Checks the (schema-valid) params against limits and fills defaults; throws TandemError. */
  parse(raw: Readonly<Record<string, unknown>>): P;
  /** Upper estimate of the device memory the job needs at once, in bytes. */
  memoryBytes(p: P): number;
  /** 'training' | 'latency' | 'throughput' | 'batch' ... matched by the operator's hardware rules. */
  jobClass(p: P): string;
  /**
   * The job's time budget when the request gives no timeoutSeconds (capped by the tenant's maximum):
   * short for quick types (sleep, gemm), longer for workloads. Absent: the service's default.
   */
  readonly defaultTimeoutSeconds?: number;
  /** The device the user asked for, if any (overrides the hardware rules). */
  requestedDevice?(p: P): string | undefined;
  /**
   * How many devices of the requested kind the job holds at once (a training run over several GPUs);
   * absent: one. A server with fewer refuses the job at submit.
   */
  requestedDeviceCount?(p: P): number;
  run(ctx: JobContext<P>): Promise<unknown>;
}

export type AnyJobType = JobType<unknown>;

export function defineJobType<P>(t: JobType<P>): AnyJobType {
  return t as unknown as AnyJobType;
}

/**
 * The job's device-memory estimate as stored and admitted: a whole, finite, non-negative number of
 * bytes. An estimate that is not (a type's bug for some accepted parameter shape) refuses that one
 * submission with a 400 instead of reaching the store, where it would fail the insert.
 */
export function memoryEstimate(type: AnyJobType, params: unknown): number {
  const bytes = type.memoryBytes(params);
  if (typeof bytes !== 'number' || !Number.isFinite(bytes) || bytes < 0 || bytes > Number.MAX_SAFE_INTEGER)
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      `the ${type.name} job's memory estimate for these parameters is not a finite number of bytes (${String(bytes)})`,
      { type: type.name, estimate: String(bytes) },
    );
  return Math.ceil(bytes);
}
