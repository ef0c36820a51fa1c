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
    .addOption(
      new Option('--eval-batches <n>', 'batches of held-out data evaluated at the end')
        .default(10)
        .argParser(intParser(0, 1e6)),
    )
    .action(async (model: string, opts: import('./train-commands.js').TrainOptions) => {
      setCode(await (await import('./train-commands.js')).trainCommand(model, opts));
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
