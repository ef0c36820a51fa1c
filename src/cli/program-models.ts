/**
 * The interactive lane in the `tandem` tree: `tandem models list | register | unload` (served models
 * of a running service; plain `tandem models` still shows the runtime's performance models) and
 * `tandem infer <model> --input file.json | --image file.png | --tensor file.npy`. Declarations only: the actions import served-model-commands.ts.
 */
import { Option, type Command } from 'commander';
import { backendsParser, intParser, type SetExitCode } from './cli-options.js';
import { clientCommand } from './program-service.js';

type Opts<T> = T & Readonly<Record<string, unknown>>;
type Commands = typeof import('./served-model-commands.js');

/**
 * The subcommand's options with `--json` wherever it was written: the parent `models` (the performance
 * models) has its own --json, which commander gives to the parent when both could take it.
 */
function withParent<T extends object>(opts: T, cmd: Command): T {
  return { ...opts, json: (opts as { json?: boolean }).json === true || cmd.parent?.opts()['json'] === true };
}

export function addModelCommands(program: Command, setCode: SetExitCode): void {
  const run = (): Promise<Commands> => import('./served-model-commands.js');
  const models =
    program.commands.find((c) => c.name() === 'models') ??
    program.command('models').description('served models of a running service');
  clientCommand(
    models,
    'list',
    'the models a running service serves: versions, state, batching, live figures',
  ).action(async (opts: Opts<import('./served-model-commands.js').ClientOptions>, cmd: Command) => {
    setCode(await (await run()).modelsListCommand(withParent(opts, cmd)));
  });
  clientCommand(
    models,
    'register',
    'register and load a model version (built in, from a train job, or a weights file)',
  )
    .argument('<name>', 'model name')
    .requiredOption('--kind <kind>', 'model kind: mlp, cnn, ... (GET /v1/model-kinds)')
    .addOption(
      new Option('--model-version <n>', 'version (default: the next)').argParser(intParser(1, 999_999_999)),
    )
    .option('--config <json>', "the kind's configuration as a JSON object")
    .option('--from-job <id>', "weights from this finished train job's last checkpoint")
    .option('--weights <file>', 'weights from this safetensors (or .onnx) file, uploaded')
    .addOption(
      new Option('--placement <kinds>', 'device kinds that may serve it, in order, e.g. cuda,cpu').argParser(
        backendsParser(false),
      ),
    )
    .option('--prefer-idle', 'serve on the first listed kind no job is using')
    .option(
      '--batching <json>',
      'batcher knobs as JSON: maxBatchSize, maxQueueDelayUs, preferredBatchSizes, ...',
    )
    .option(
      '--warmup <json>',
      'requests run before the model is ready, as JSON: {"inputs": <one request\'s inputs>, "requests": 200}',
    )
    .action(
      async (
        name: string,
        opts: Opts<import('./served-model-commands.js').RegisterOptions>,
        cmd: Command,
      ) => {
        setCode(await (await run()).modelsRegisterCommand(name, withParent(opts, cmd)));
      },
    );
  clientCommand(models, 'unload', 'unload a model (every version, or --model-version)')
    .argument('<name>', 'model name')
    .addOption(new Option('--model-version <n>', 'only this version').argParser(intParser(1, 999_999_999)))
    .action(
      async (name: string, opts: Opts<import('./served-model-commands.js').UnloadOptions>, cmd: Command) => {
        setCode(await (await run()).modelsUnloadCommand(name, withParent(opts, cmd)));
      },
    );

  clientCommand(program, 'infer', "one request through a served model's dynamic batcher")
    .argument('<model>', 'model name')
    .option(
      '--input <file>',
      "a JSON file: the request's inputs (or a body with an `inputs` field); - for stdin",
    )
    .option(
      '--image <file>',
      'a PNG or JPEG image, sent as uint8 RGB pixels [H, W, 3] to an onnx model registered with a preprocess config (normalized on the device)',
    )
    .option('--tensor <file>', 'a .npy file (C order, float32 or uint8), sent as its raw bytes')
    .option(
      '--input-name <name>',
      "the graph input --image or --tensor feeds (default: the preprocess input, or the model's only input)",
    )
    .addHelpText(
      'after',
      `Give exactly one of --input, --image, --tensor. For example, PaddleOCR's detector fed PNG pixels:
  tandem models register det --kind onnx --weights det.onnx \\
    --config '{"preprocess":{"input":"x","mean":[0.485,0.456,0.406],"std":[0.229,0.224,0.225]}}'
  tandem infer det --image page.png`,
    )
    .addOption(
      new Option('--model-version <n>', 'model version (default: the newest)').argParser(
        intParser(1, 999_999_999),
      ),
    )
    .addOption(
      new Option('--priority <p>', 'higher is served first (default: 0)').argParser(intParser(-100, 100)),
    )
    .addOption(
      new Option('--timeout-ms <ms>', 'answered 504 if not started by then').argParser(
        intParser(0, 3_600_000),
      ),
    )
    .action(async (model: string, opts: Opts<import('./served-model-commands.js').InferOptions>) => {
      setCode(await (await run()).inferCommand(model, opts));
    });
}
