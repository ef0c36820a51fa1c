/**
 * Training across devices (issue 18): data parallelism with bucketed all-reduce overlapped with the
 * backward pass, and ZeRO-1 (sharded optimizer state). `trainDataParallel` is what `tandem train
 * --parallel data|zero1` and the `train` job call.
 */
import type { Runtime } from '../../runtime/runtime.js';
import type { StepReport, TrainData, TrainSpec } from '../train.js';
import {
  AllReduceGrads,
  checkParallel,
  Replicas,
  runReplicas,
  type ParallelMode,
  type ReplicaOptions,
} from './data-parallel.js';
import { Zero1 } from './zero1.js';

export {
  AllReduceGrads,
  BUCKET_BYTES,
  PARALLEL_MODES,
  planBuckets,
  rankDevice,
  Replicas,
  runReplicas,
  type Bucket,
  type GradReduction,
  type ParallelMode,
  type ReplicaOptions,
} from './data-parallel.js';
export { Zero1 } from './zero1.js';

/** Builds the replicas of `spec` on `devices` (checked identical) with the mode's gradient reduction. */
export async function buildReplicas(
  rt: Runtime,
  spec: TrainSpec,
  data: TrainData,
  devices: readonly string[],
  mode: ParallelMode,
  options: ReplicaOptions = {},
): Promise<Replicas> {
  checkParallel(spec, devices, mode);
  const comm = rt.collectives(devices, options.engine === undefined ? {} : { engine: options.engine });
  let replicas: Replicas;
  try {
    replicas = new Replicas(rt, spec, data, devices, comm, options);
  } catch (e) {
    comm.close();
    throw e;
  }
  try {
    await replicas.verifyIdentical();
    replicas.reduction = mode === 'zero1' ? new Zero1(replicas) : new AllReduceGrads(replicas);
  } catch (e) {
    replicas.dispose();
    throw e;
  }
  return replicas;
}

/** Trains `spec` data-parallel over `opts.devices` (the global batch spec.batch split evenly). */
export async function trainDataParallel(
  rt: Runtime,
  spec: TrainSpec,
  data: TrainData,
  opts: {
    devices: readonly string[];
    mode: 'data' | 'zero1';
    onStep?: (r: StepReport) => void;
    signal?: AbortSignal;
  },
): Promise<{ finalLoss: number; steps: number }> {
  const replicas = await buildReplicas(rt, spec, data, opts.devices, opts.mode);
  try {
    return await runReplicas(replicas, opts.onStep, opts.signal);
  } finally {
    replicas.dispose();
  }
}
