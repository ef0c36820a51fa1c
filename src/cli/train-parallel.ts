/**
 * `tandem train … --gpus N --parallel data|zero1|pipeline`: one training run over several GPUs. The
 * request is checked before anything loads (a mode without several GPUs, pipeline for a model that is
 * not a GPT, micro-batches that do not divide the batch…), then the GPUs are counted: asking for more
 * than the machine has is TANDEM_ERR_DEVICE_ABSENT naming those it has.
 */
import { TandemError } from '../core/errors.js';
import type { Runtime } from '../runtime/runtime.js';
import { pickGpus, planParallel, trainParallel } from '../nn/parallel/plan.js';
import type { ModelName } from '../nn/train.js';
import { print, reportError } from './output.js';
import { openRuntime } from './runtime-commands.js';
import { loadData, progressLine, specOf, type TrainOptions } from './train-commands.js';

export async function parallelTrainCommand(model: string, o: TrainOptions): Promise<number> {
  const json = o.json === true;
  let rt: Runtime | null = null;
  const abort = new AbortController();
  const onSigint = (): void => abort.abort();
  try {
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
    rt = await openRuntime({ backends: ['cpu', 'cuda'], summary: !json });
    const devices = pickGpus(rt.devices, plan.gpus);
    const data = await loadData(model as ModelName, o.data);
    const steps = spec.steps;
    const tty = process.stderr.isTTY === true && !json;
    process.on('SIGINT', onSigint);
    let last: { loss: number; throughput: number; unit: string } | null = null;
    const result = await trainParallel(rt, spec, data, plan, devices, {
      signal: abort.signal,
      onStep: (r) => {
        last = r;
        if (json) process.stdout.write(`${JSON.stringify({ event: 'step', ...r })}\n`);
        else if (tty) process.stderr.write(`\r${progressLine(r, steps)}\x1b[K`);
        else if (r.step % 10 === 0 || r.step === steps) process.stderr.write(`${progressLine(r, steps)}\n`);
      },
    });
    if (tty) process.stderr.write('\n');
    const final = last as { loss: number; throughput: number; unit: string } | null;
    const summary = {
      event: 'done',
      model,
      parallel: plan.mode,
      devices,
      ...(plan.mode === 'pipeline' ? { microBatches: plan.microBatches, schedule: plan.schedule } : {}),
      steps: result.steps,
      stopped: abort.signal.aborted,
      loss: result.finalLoss,
      throughput: final?.throughput ?? null,
      unit: final?.unit ?? null,
    };
    print(
      json,
      summary,
      () =>
        `${abort.signal.aborted ? 'stopped' : 'trained'} ${model} (${plan.mode} over ${devices.join(', ')}) for ${result.steps} steps: loss ${result.finalLoss?.toFixed(4) ?? '-'}`,
    );
    return 0;
  } catch (e) {
    return reportError(e, json);
  } finally {
    process.off('SIGINT', onSigint);
    if (rt) await rt.close();
  }
}
