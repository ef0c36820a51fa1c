/**
 * GPT-2 data-parallel training throughput (B.5 of research/anchors-dl.md): the same per-GPU batch on one
 * GPU with the plain Trainer, then through the data-parallel replicas — with ONE NCCL rank in both modes
 * (what the machinery costs: buckets, the collective tasks, the replica loop, ZeRO-1's pieces) and, with
 * two GPUs or more, across --gpus GPUs in `data` and `zero1` modes. Scaling = tokens/s(N GPUs) ÷ tokens/s(1 GPU). PyTorch DDP in
 * the same call: bench/torch/gpt2_ddp.py (world size 1 standalone, N under torch.distributed.run).
 *   node dist/bench/nn-data-parallel.js [--preset gpt2] [--batch 64] [--steps 15] [--precision bf16] [--gpus 2]
 */
import { Runtime } from 'tandem';
import {
  buildReplicas,
  runReplicas,
  Trainer,
  type Precision,
  type StepReport,
  type TrainSpec,
} from 'tandem/nn';
import { intOption, parse } from '../src/cli/output.js';

Object.assign(process.env, {
  NCCL_NVLS_ENABLE: '0',
  TORCH_SYMM_MEM_DISABLE_MULTICAST: '1',
  NVSHMEM_DISABLE_NVLS: '1',
});
const { values } = parse(process.argv.slice(2), {
  preset: { type: 'string', default: 'gpt2' },
  batch: { type: 'string', default: '64' },
  steps: { type: 'string' },
  precision: { type: 'string', default: 'bf16' },
  gpus: { type: 'string', default: '2' },
});
const steps = intOption(values['steps'], 'steps', 15);
const perGpu = intOption(values['batch'], 'batch', 64);
const rt = await Runtime.create({ backends: ['cuda'], log: () => undefined });

/** Median tokens/s over the steps after the first third (compilation and caches warm up first). */
function median(reports: StepReport[]): number {
  const xs = reports.slice(Math.floor(reports.length / 3)).map((r) => r.throughput);
  xs.sort((a, b) => a - b);
  return xs[Math.floor(xs.length / 2)] ?? NaN;
}

try {
  const gpus = rt.devices.filter((d) => d.info.kind === 'cuda').map((d) => d.info.id);
  const n = Math.min(intOption(values['gpus'], 'gpus', 2), gpus.length);
  const train = Int32Array.from({ length: 4_000_000 }, (_, i) => (Math.imul(i, 2654435761) >>> 0) % 50257);
  const data = { kind: 'tokens' as const, train };
  const base: TrainSpec = {
    model: 'gpt',
    preset: String(values['preset']),
    steps,
    batch: perGpu,
    precision: values['precision'] as Precision,
    seed: 1,
  };
  const line = (o: Record<string, unknown>): void =>
    console.log(JSON.stringify({ preset: base.preset, perGpu, ...o }));
  const one: StepReport[] = [];
  const t = new Trainer(rt, { ...base, device: 'cuda0' }, data);
  await t.run((r) => one.push(r));
  t.optimizer.dispose();
  const single = median(one);
  line({ impl: 'tandem Trainer', gpus: 1, tokensPerSecond: Math.round(single), loss: one.at(-1)?.loss });
  const runs: [string[], 'data' | 'zero1'][] = [
    [['cuda0'], 'data'],
    [['cuda0'], 'zero1'],
  ];
  if (n >= 2) runs.push([gpus.slice(0, n), 'data'], [gpus.slice(0, n), 'zero1']);
  for (const [devices, mode] of runs) {
    const reports: StepReport[] = [];
    // NCCL asked for by name: a fallback to the portable engine would be another measurement.
    const replicas = await buildReplicas(
      rt,
      { ...base, batch: perGpu * devices.length },
      data,
      devices,
      mode,
      {
        engine: 'nccl',
      },
    );
    try {
      await runReplicas(replicas, (r) => reports.push(r));
    } finally {
      replicas.dispose();
    }
    const tps = median(reports);
    line({
      impl: `tandem ${mode} parallel (NCCL)`,
      gpus: devices.length,
      tokensPerSecond: Math.round(tps),
      scaling: +(tps / single).toFixed(3),
      loss: reports.at(-1)?.loss,
    });
  }
  if (n < 2) line({ skipped: `scaling across GPUs needs 2 GPUs, found ${gpus.length}` });
} finally {
  await rt.close();
}
