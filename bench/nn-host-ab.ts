/**
 * The host's cost of deep-learning work through the runtime, this build beside another build (the
 * "before", loaded into the same process and measured alternately: these 2-core machines are shared
 * and noisy). The device is a simulated GPU that computes nothing and costs no time (`sim`, compute
 * off, launch cost 0), so what is timed is only the main thread: the nn layer recording ops, the
 * runtime's validation, dependency tracking, placement, coherence, dispatch and completion.
 *
 * - a GPT-2-shaped training step (12 layers, 12 heads, AdamW with fp32 masters, bf16): the same tasks
 *   per step as GPT-2 124M (the width is cut to 48 so the host-side initialisation stays cheap; task
 *   counts do not depend on it). "submit" is the step's own code up to `zeroGrad` (what nn-gpt2.ts
 *   reports as the host's share on a GPU); "total" adds the completions until the runtime is idle;
 *   This build trains in sequence mode (Nn `sequences`) unless `--train-sequences off`;
 * - a batch-1 scoring forward (`GptInference.last`, 128 tokens, top-5): the lane's batch-1 path.
 *
 * With `--backend cpu` the same runs go to the CPU backend's worker threads, which do compute (the
 * width-48 kernels take microseconds): the host cost as a real backend adds it, messages included.
 *
 *   node dist/bench/nn-host-ab.js --base /path/to/other/dist [--rounds 9] [--steps 12] [--batch 16]
 *     [--backend sim|cpu] [--train-sequences on|off]
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { quantile } from './quantile.js';

const median = (xs: readonly number[]): number =>
  quantile(
    [...xs].sort((a, b) => a - b),
    0.5,
  );

const { values } = parseArgs({
  options: {
    base: { type: 'string' },
    rounds: { type: 'string', default: '9' },
    steps: { type: 'string', default: '12' },
    batch: { type: 'string', default: '16' },
    backend: { type: 'string', default: 'sim' },
    'train-sequences': { type: 'string', default: 'on' },
  },
});
const onCpu = values.backend === 'cpu';
const trainSequences = values['train-sequences'] !== 'off';
const device = onCpu ? 'cpu' : 'sim0';
const rounds = Number(values.rounds);
const steps = Number(values.steps);
const batch = Number(values.batch);
const SEQ = 64;
const SCORE_SEQ = 128;

// Each build's modules, loaded by path so two builds can live in one process.
type NnModule = typeof import('../src/nn/index.js');
type InferenceModule = typeof import('../src/nn/inference/index.js');
type RuntimeModule = typeof import('../src/runtime/runtime.js');
type SimModule = typeof import('../src/devices/sim/backend.js');
interface Build {
  readonly name: string;
  readonly nn: NnModule;
  readonly inference: InferenceModule;
  readonly runtime: RuntimeModule;
  readonly sim: SimModule;
}

async function load(name: string, dist: string): Promise<Build> {
  const at = (p: string): string => pathToFileURL(resolve(dist, p)).href;
  return {
    name,
    nn: (await import(at('src/nn/index.js'))) as NnModule,
    inference: (await import(at('src/nn/inference/index.js'))) as InferenceModule,
    runtime: (await import(at('src/runtime/runtime.js'))) as RuntimeModule,
    sim: (await import(at('src/devices/sim/backend.js'))) as SimModule,
  };
}

interface Figures {
  submitMs: number;
  totalMs: number;
  tasksPerStep: number;
  scoreMs: number;
  tasksPerScore: number;
}

async function measure(b: Build): Promise<Figures> {
  const backend = onCpu
    ? 'cpu'
    : b.sim.simBackend({ devices: [{ id: 'sim0', type: 'gpu', depth: 256, launchUs: 0 }], compute: false });
  const rt = await b.runtime.Runtime.create({
    backends: [backend],
    calibrate: false,
    log: () => undefined,
    ...(onCpu ? { options: { cpu: { threads: 1 } } } : {}),
  });
  try {
    let tasks = 0;
    const counter = { onTaskEnd: (): void => void tasks++ };
    // Sequence mode for training where the build has it (an older build ignores the option).
    const nn = new b.nn.Nn(rt, {
      precision: onCpu ? 'f32' : 'bf16',
      device,
      seed: 1,
      sequences: trainSequences,
    });
    const config = b.nn.gptConfig('gpt2', { width: 48, vocab: 512, paddedVocab: 512, context: SCORE_SEQ });
    const model = new b.nn.Gpt(nn, config);
    const opt = new b.nn.AdamW(nn, model.parameters(), { lr: 3e-4, weightDecay: 0.1, maxNorm: 1 });
    const tokens = Int32Array.from({ length: batch * SEQ }, (_, i) => (i * 7919) % config.vocab);
    const step = async (): Promise<number> => {
      const t0 = performance.now();
      const ids = nn.input(tokens, [batch, SEQ], 'i32');
      const targets = nn.input(tokens, [batch * SEQ], 'i32');
      const loss = model.loss(ids, targets);
      await loss.backward();
      opt.step();
      opt.zeroGrad();
      rt.free(ids.data);
      rt.free(targets.data);
      const submitted = performance.now() - t0;
      await loss.item();
      return submitted;
    };
    for (let i = 0; i < 3; i++) await step();
    rt.addObserver(counter);
    await step();
    await rt.idle();
    rt.removeObserver(counter);
    const tasksPerStep = tasks;
    const submit: number[] = [];
    const total: number[] = [];
    for (let i = 0; i < steps; i++) {
      const t0 = performance.now();
      submit.push(await step());
      await rt.idle();
      total.push(performance.now() - t0);
    }
    const inf = new b.inference.GptInference(model);
    const seqs = [Array.from({ length: SCORE_SEQ }, (_, j) => (j * 7919) % config.vocab)];
    const score = (): Promise<unknown> => inf.last(seqs, { kind: 'topk', k: 5 }, { device });
    for (let i = 0; i < 5; i++) await score();
    tasks = 0;
    rt.addObserver(counter);
    await score();
    rt.removeObserver(counter);
    const tasksPerScore = tasks;
    const scores: number[] = [];
    for (let i = 0; i < steps * 4; i++) {
      const t0 = performance.now();
      await score();
      scores.push(performance.now() - t0);
    }
    return {
      submitMs: median(submit),
      totalMs: median(total),
      tasksPerStep,
      scoreMs: median(scores),
      tasksPerScore,
    };
  } finally {
    await rt.close();
  }
}

const builds = [await load('this build', resolve(import.meta.dirname, '..'))];
if (values.base !== undefined) builds.push(await load('base', values.base));
const runs = new Map<string, Figures[]>(builds.map((b) => [b.name, []]));
for (let r = 0; r < rounds; r++)
  for (const b of r % 2 === 0 ? builds : [...builds].reverse()) runs.get(b.name)!.push(await measure(b));

const med = (xs: Figures[], k: keyof Figures): number => median(xs.map((x) => x[k]));
const rows = builds.map((b) => {
  const xs = runs.get(b.name)!;
  const tasks = med(xs, 'tasksPerStep');
  const scoreTasks = med(xs, 'tasksPerScore');
  return {
    build: b.name,
    tasksPerStep: tasks,
    stepSubmitMs: med(xs, 'submitMs'),
    stepTotalMs: med(xs, 'totalMs'),
    usPerTask: (med(xs, 'totalMs') * 1000) / tasks,
    tasksPerScore: scoreTasks,
    scoreMs: med(xs, 'scoreMs'),
    scoreUsPerTask: (med(xs, 'scoreMs') * 1000) / scoreTasks,
  };
});
for (const r of rows) console.log(JSON.stringify(r));
if (rows.length === 2) {
  const [a, z] = rows as [(typeof rows)[0], (typeof rows)[0]];
  console.log(
    JSON.stringify({
      base_over_this: {
        stepSubmit: z.stepSubmitMs / a.stepSubmitMs,
        stepTotal: z.stepTotalMs / a.stepTotalMs,
        score: z.scoreMs / a.scoreMs,
      },
    }),
  );
}
