/**
 * The interactive lane's client commands in the `tandem` tree: `perf` (perf_analyzer's concurrency
 * mode against a served model). Declarations only, as in program.ts; the action imports its code.
 */
import { Option, type Command } from 'commander';
import { CLIENT_ENV, envHelp, intParser, jsonOption, numberParser, type SetExitCode } from './cli-options.js';

export function addServingClients(program: Command, setCode: SetExitCode): void {
  program
    .command('perf')
    .description(
      'closed-loop load on a served model: N clients on keep-alive connections; infer/s, p50/p95/p99, the server split and batch sizes',
    )
    .argument('<model>', 'model name (`GET /v1/models` lists them)')
    .addOption(jsonOption('one JSON document: a report per concurrency level'))
    .option('--concurrency <range>', 'n, a:b (doubling, b included) or a:b:step', '1')
    .option(
      '--input <file>',
      'JSON: the inputs, a request body {inputs, priority, timeoutMs}, or an array of them',
    )
    .addOption(new Option('--seconds <s>', 'measured window per level').default(5).argParser(numberParser))
    .addOption(
      new Option('--warmup <s>', 'warm-up per level, not measured').default(1).argParser(numberParser),
    )
    .addOption(
      new Option(
        '--threads <n>',
        'client threads the connections are spread over (one thread tops out near 10^4 requests/s)',
      )
        .default(1)
        .argParser(intParser(1, 256)),
    )
    .addOption(
      new Option('--model-version <v>', 'a version (default: the latest)').argParser(intParser(1, 1e9)),
    )
    .addOption(new Option('--url <url>', 'service URL (default: http://127.0.0.1:8080)').env('TANDEM_URL'))
    .addOption(new Option('--key <key>', 'API key').env('TANDEM_KEY'))
    .addHelpText('after', envHelp(CLIENT_ENV))
    .action(async (model: string, opts: import('./perf-command.js').PerfOptions) => {
      setCode(await (await import('./perf-command.js')).perfCommand(model, opts));
    });
}
