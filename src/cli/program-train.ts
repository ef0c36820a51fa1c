/**
 * `tandem train` and `tandem eval`: deep learning on the local devices (src/nn). Declared here (flags,
 * defaults); the code is imported in the actions, so --help loads nothing.
 */
import { Option, type Command } from 'commander';
import {
  RUNTIME_ENV,
  deviceParser,
  envHelp,
  intParser,
  jsonOption,
  numberParser,
  oneOfParser,
  type SetExitCode,
} from './cli-options.js';

export const TRAIN_MODELS = ['mlp', 'cnn', 'gpt'] as const;
export const TRAIN_PRECISIONS = ['f32', 'bf16', 'fp16'] as const;
/** Kept here (not imported from nn/parallel) so that --help loads no training code. */
export const PARALLEL_MODES = ['data', 'zero1', 'pipeline'] as const;
export const PIPELINE_SCHEDULES = ['1f1b', 'gpipe'] as const;

function common(cmd: Command): Command {
  return cmd
    .addOption(jsonOption())
    .option('--preset <name>', 'gpt: gpt2 (124M), gpt2-medium, gpt-mini, gpt-micro', 'gpt-mini')
    .option(
      '--data <path>',
      'mlp/cnn: a Fashion-MNIST IDX directory (default /usr/share/datasets/fashion-mnist); gpt: "brown" (the Brown corpus, GPT-2 tokens) or a uint16 token file',
    )
    .addOption(
      new Option('--batch <n>', 'batch size (sequences for gpt)')
        .default(64)
        .argParser(intParser(1, 1 << 20)),
    )
    .addOption(
      new Option('--seq-len <n>', 'gpt: tokens per sequence (default: the preset context)').argParser(
        intParser(1, 1 << 16),
      ),
    )
    .addOption(
      new Option('--precision <p>', 'f32, bf16 or fp16 (with dynamic loss scaling)')
        .default('f32')
        .argParser(oneOfParser(TRAIN_PRECISIONS)),
    )
    .addOption(
      new Option('--device <device>', 'cpu, cuda, webgpu or an id (default: the scheduler places)').argParser(
        deviceParser(false),
      ),
    )
    .addOption(
      new Option('--seed <n>', 'initialisation and data order')
        .default(1)
        .argParser(intParser(0, 2 ** 31 - 1)),
    )
    .option('--checkpoint <dir>', 'checkpoint directory (safetensors)')
    .addHelpText('after', envHelp(RUNTIME_ENV));
}

export function addTrainCommands(program: Command, setCode: SetExitCode): void {
  common(
    program
      .command('train')
      .description('train a model (mlp, cnn on Fashion-MNIST; gpt on text) with a live progress line')
      .argument('<model>', TRAIN_MODELS.join(', '), oneOfParser(TRAIN_MODELS)),
  )
    .addOption(new Option('--steps <n>', 'optimizer steps').default(100).argParser(intParser(1, 1e9)))
    .addOption(
      new Option('--lr <rate>', 'peak learning rate (default 1e-3, gpt 6e-4)').argParser(numberParser),
    )
    .addOption(new Option('--warmup <n>', 'linear warm-up steps').default(0).argParser(intParser(0, 1e9)))
    .addOption(
      new Option('--checkpoint-every <n>', 'steps between checkpoints (with --checkpoint)')
        .default(0)
        .argParser(intParser(0, 1e9)),
    )
    .option('--resume', 'continue from the checkpoint in --checkpoint')
    .option(
      '--sequences',
      "submit each pass's kernels as a few runtime sequence tasks (less host work per step; the default for gpt on CUDA)",
    )
    .option(
      '--no-sequences',
      'submit a task per kernel (the default for mlp and cnn, and on the CPU and WebGPU)',
    )
    .option(
      '--static-step',
      'record the first step and replay it for every later one: one task per step, a CUDA graph on a GPU (one device; the default for mlp and cnn on CUDA outside fp16)',
    )
    .option('--no-static-step', 'run every step on its own (the default for gpt, and on the CPU and WebGPU)')
    .addOption(
      new Option(
        '--gpus <n>',
        'GPUs to train on (the first n CUDA devices); with 2 or more, --parallel says how',
      )
        .default(1)
        .argParser(intParser(1, 16)),
    )
    .addOption(
      new Option(
        '--parallel <mode>',
        'with --gpus ≥ 2: data (gradient all-reduce; the default), zero1 (optimizer state sharded) or pipeline (gpt layers split into stages, 1F1B)',
      ).argParser(oneOfParser(PARALLEL_MODES)),
    )
    .addOption(
      new Option(
        '--micro-batches <n>',
        'pipeline: micro-batches per step, dividing --batch (default 4 per GPU)',
      ).argParser(intParser(1, 1 << 16)),
    )
    .addOption(
      new Option('--schedule <kind>', 'pipeline: 1f1b or gpipe')
        .default('1f1b')
        .argParser(oneOfParser(PIPELINE_SCHEDULES)),
    )
    .addOption(
      new Option('--eval-batches <n>', 'batches of held-out data evaluated at the end')
        .default(10)
        .argParser(intParser(0, 1e6)),
    )
    .action(async (model: string, opts: import('./train-commands.js').TrainOptions) => {
      // Several GPUs (or a parallel mode, refused with one GPU): the multi-device run.
      if ((opts.gpus ?? 1) > 1 || opts.parallel !== undefined)
        setCode(await (await import('./train-parallel.js')).parallelTrainCommand(model, opts));
      else setCode(await (await import('./train-commands.js')).trainCommand(model, opts));
    });
  common(
    program
      .command('eval')
      .description('evaluate a checkpoint: test accuracy (mlp, cnn) or validation loss (gpt)')
      .argument('<model>', TRAIN_MODELS.join(', '), oneOfParser(TRAIN_MODELS)),
  )
    .addOption(
      new Option('--eval-batches <n>', 'batches evaluated (gpt)').default(20).argParser(intParser(1, 1e6)),
    )
    .action(async (model: string, opts: import('./train-commands.js').TrainOptions) => {
      setCode(await (await import('./train-commands.js')).evalCommand(model, opts));
    });
}
