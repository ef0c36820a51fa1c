/**
 * What the data-parallel tests (CPU here, CUDA in test/gpu/nn-parallel.test.ts) both run: one replica on
 * the whole batch, and replicas stepped by hand with their parameters checked identical after every step.
 */
import assert from 'node:assert/strict';
import { buildReplicas, type ReplicaOptions, type Replicas } from '../../src/nn/parallel/index.js';
import { Trainer, type TrainData, type TrainSpec } from '../../src/nn/train.js';
import type { Runtime } from '../../src/runtime/runtime.js';

export interface Run {
  readonly losses: number[];
  readonly params: Float64Array[];
}

/** One replica on `device` trained on the whole batch: its losses and final parameters. */
export async function singleRun(rt: Runtime, spec: TrainSpec, data: TrainData, device: string): Promise<Run> {
  const t = new Trainer(rt, { ...spec, device }, data);
  const losses: number[] = [];
  await t.run((r) => losses.push(r.loss));
  const params = await Promise.all(t.built.model.parameters().map((p) => p.values()));
  t.optimizer.dispose();
  return { losses, params };
}

/** Steps replicas on `ranks` by hand (mean loss per step), asserting identical replicas after each step. */
export async function parallelRun(
  rt: Runtime,
  spec: TrainSpec,
  data: TrainData,
  ranks: string[],
  mode: 'data' | 'zero1',
  options: ReplicaOptions = {},
): Promise<Run & { replicas: Replicas }> {
  const replicas = await buildReplicas(rt, spec, data, ranks, mode, options);
  const losses: number[] = [];
  for (let it = 0; it < spec.steps; it++) {
    const ls = await replicas.forwardBackward();
    await replicas.reduction!.update(replicas.trainers[0]!.lrAt(it));
    replicas.endStep();
    const values = await Promise.all(ls.map((l) => l.item()));
    losses.push(values.reduce((a, b) => a + b, 0) / values.length);
    assert.equal(await replicas.maxDivergence(), 0, `replicas differ after step ${it + 1}`);
  }
  const params = await Promise.all(replicas.params[0]!.map((p) => p.values()));
  return { losses, params, replicas };
}
