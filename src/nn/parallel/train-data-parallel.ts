/**
 * Data-parallel and ZeRO-1 training as one call: the replicas built (and checked identical), the mode's
 * gradient reduction chosen, the steps run. What `tandem train --parallel data|zero1` and the `train`
 * job reach through plan.ts.
 */
import type { Runtime } from '../../runtime/runtime.js';
import type { StepReport, TrainData, TrainSpec } from '../train.js';
import {
  AllReduceGrads,
  checkParallel,
  Replicas,
  runReplicas,
  type DataParallelMode,
  type ReplicaOptions,
} from './data-parallel.js';
import { Zero1 } from './zero1.js';

/** Builds the replicas of `spec` on `devices` (checked identical) with the mode's gradient reduction. */
export async function buildReplicas(
  rt: Runtime,
  spec: TrainSpec,
  data: TrainData,
  devices: readonly string[],
  mode: DataParallelMode,
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
