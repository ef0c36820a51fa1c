/**
 * The contract of the interactive lane (docs/serving.md): what a served model is, what the dynamic
 * batcher hands it, and what a model kind's factory builds. Types only: the repository, the batcher,
 * the routes and every model kind (classifiers, GPT scoring and generation, the option pricer, ONNX)
 * depend on this file and not on each other.
 *
 * A request through the lane is never persisted: it is parsed on the event loop (`parse`, cheap, throws
 * a TandemError that becomes a 400 for that request alone), queued in the model's batcher, and run with
 * others as one `runBatch` whose tasks the scheduler places like any job's.
 */
import type { TandemError } from '../../core/errors.js';
import type { HardwareKind } from '../../devices/device.js';
import type { JsonSchema, ServiceRuntime } from '../jobs/job-type.js';

/** Where a model's batches may run: device kinds in order of preference (the placement rule). */
export interface ModelPlacement {
  readonly kinds: readonly HardwareKind[];
  /**
   * When true, a batch goes to the first listed kind whose devices are not busy with jobs (e.g. serve on
   * the CPU while the GPUs train); otherwise always to the first kind present.
   */
  readonly preferIdle?: boolean;
}

/** What the batcher knows of the devices when it starts a batch. */
export interface BatchContext {
  readonly rt: ServiceRuntime;
  /** A device kind or id for rt.submit's `device`, chosen by the placement rule. */
  readonly device: string | undefined;
  /** Labels for rt.submit (model, version, batch id), so traces and metrics find the batch's tasks. */
  readonly tags: Readonly<Record<string, string>>;
}

/** One model version, loaded and ready to run batches. */
export interface ServedModel<In = unknown, Out = unknown> {
  readonly name: string;
  readonly version: number;
  /** The factory that built it: 'mlp', 'cnn', 'gpt', 'option-pricer', 'onnx', ... */
  readonly kind: string;
  /** JSON schema of one request's `inputs` (for OpenAPI, `tandem types` and the dashboard). */
  readonly inputSchema: JsonSchema;
  /** JSON schema of one request's `outputs`. */
  readonly outputSchema: JsonSchema;
  /** The largest batch `runBatch` accepts (the batcher's maxBatchSize is capped by it). */
  readonly maxBatchSize: number;
  /** Bytes of device memory the loaded weights hold (shown in the model list). */
  readonly weightBytes: number;
  /**
   * Validates and converts one request's JSON `inputs`; throws TandemError (SHAPE, DTYPE, LIMIT,
   * INVALID_ARGUMENT) for this request alone. Runs on the event loop: keep it cheap.
   */
  parse(inputs: unknown): In;
  /**
   * Runs one batch. Returns one entry per item, in order: the output, or a TandemError that fails that
   * item alone (the others in the batch are still answered). A thrown error fails the whole batch.
   */
  runBatch(items: readonly In[], ctx: BatchContext): Promise<Array<Out | TandemError>>;
  /** Frees the weights; the model is not used after. */
  unload(): Promise<void>;
}

/** How a model version is described when it is registered (stored in the repository's index). */
export interface ModelSpec {
  readonly name: string;
  readonly version: number;
  readonly kind: string;
  /** The kind's configuration (validated by the factory's configSchema). */
  readonly config: Readonly<Record<string, unknown>>;
  /** A safetensors file (or an .onnx file for kind 'onnx') under the service's data directory, if any. */
  readonly weightsPath?: string;
  readonly placement: ModelPlacement;
}

/** Builds served models of one kind. The repository holds a table of these; plug-ins may add more. */
export interface ModelFactory {
  readonly kind: string;
  readonly description: string;
  readonly configSchema: JsonSchema;
  /**
   * The device kinds its batches can run on, when not all: a registration without a placement gets the
   * default order with only these (the option pricer has no WebGPU kernel, so the default of cuda,
   * webgpu, cpu refused it).
   */
  readonly deviceKinds?: readonly HardwareKind[];
  /**
   * The largest batch a model of this config will accept, when known before it loads: a registration's
   * maxBatchSize is capped by it at once, so the model list shows the limit the lane will use rather than
   * the requested one until the version loads (the loaded model may still lower it, e.g. an ONNX graph
   * with a fixed batch dimension).
   */
  maxBatchSizeFor?(config: Readonly<Record<string, unknown>>): number | undefined;
  /**
   * Loads the weights (or initialises them from the config's seed when the spec has none) onto the
   * runtime. Throws TandemError: BAD_CHECKPOINT for a weights file that is not valid or does not match
   * the config, INVALID_ARGUMENT for a bad config, OUT_OF_MEMORY when it does not fit.
   */
  create(spec: ModelSpec, rt: ServiceRuntime): Promise<ServedModel>;
}

/** One item's outcome as the lane answers it. */
export type ItemOutcome<Out> = Out | TandemError;
