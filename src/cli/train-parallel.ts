/**
 * `tandem train … --gpus N --parallel data|zero1|pipeline`: one training run over several GPUs. The
 * request is checked before anything loads (a mode without several GPUs, pipeline for a model that is
 * not a GPT, micro-batches that do not divide the batch…), then the GPUs are counted: asking for more
 * than the machine has is TANDEM_ERR_DEVICE_ABSENT naming those it has.
 */
import { TandemError } from '../core/errors.js';
import { pickGpus, planParallel, trainParallel } from '../nn/parallel/plan.js';
import type { ModelName } from '../nn/train.js';
import { print } from './output.js';
import { loadData, specOf, stepProgress, trainFrame, type TrainOptions } from './train-commands.js';

export async function parallelTrainCommand(model: string, o: TrainOptions): Promise<number> {
  const json = o.json === true;
  return trainFrame(json, async (f) => {
    const spec = specOf(model as ModelName, o);
    const plan = planParallel(
      {
        gpus: o.gpus ?? 1,
        ...(o.parallel === undefined ? {} : { parallel: o.parallel }),
        ...(o.microBatches === undefined ? {} : { microBatches: o.microBatches }),
        ...(o.schedule === undefined ? {} : { schedule: o.schedule }),
      },
      spec,
    );
    if (plan === null)
      throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', '--parallel needs --gpus 2 or more');
    if (o.device !== undefined)
      throw new TandemError(
        'TANDEM_ERR_INVALID_ARGUMENT',
        `--device ${o.device} with --gpus ${plan.gpus}: the run takes the first ${plan.gpus} GPUs itself`,
      );
    if (o.checkpoint !== undefined || o.resume === true)
      throw new TandemError(
        'TANDEM_ERR_UNSUPPORTED',
        '--checkpoint and --resume are not supported with --gpus ≥ 2 yet; train on one device to keep checkpoints',
      );
    const rt = await f.open({ backends: ['cpu', 'cuda'], summary: !json });
    const devices = pickGpus(rt.devices, plan.gpus);
    const data = await loadData(model as ModelName, o.data, o.preset);
    const progress = stepProgress(json, spec.steps);
    f.listen();
    let last: { loss: number; throughput: number; unit: string } | null = null;
    const result = await trainParallel(rt, spec, data, plan, devices, {
      signal: f.signal,
      onStep: (r) => {
        last = r;
        progress.step(r);
      },
    });
    progress.end();
    const final = last as { loss: number; throughput: number; unit: string } | null;
    const summary = {
      event: 'done',
      model,
      parallel: plan.mode,
      devices,
      ...(plan.mode === 'pipeline' ? { microBatches: plan.microBatches, schedule: plan.schedule } : {}),
      steps: result.steps,
      stopped: f.signal.aborted,
      loss: result.finalLoss,
      throughput: final?.throughput ?? null,
      unit: final?.unit ?? null,
    };
    print(
      json,
      summary,
      () =>
        `${f.signal.aborted ? 'stopped' : 'trained'} ${model} (${plan.mode} over ${devices.join(', ')}) for ${result.steps} steps: loss ${result.finalLoss?.toFixed(4) ?? '-'}`,
    );
    return 0;
  });
}
