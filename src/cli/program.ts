/**
 * The `tandem` command tree on commander: every command and subcommand declares its flags, defaults
 * and the environment variables it reads, so `--help` anywhere prints them and runs nothing. The
 * commands' code is imported inside their actions, never here: building the tree (and so any help)
 * loads no runtime, no service and no device. Local runtime commands are declared here, the service's
 * in program-service.ts.
 */
import { readFileSync } from 'node:fs';
import { Command, Option } from 'commander';
import {
  RUNTIME_ENV,
  backendsParser,
  deviceParser,
  dtypeParser,
  envHelp,
  givenArgv,
  intParser,
  jsonOption,
  oneOfParser,
  type SetExitCode,
} from './cli-options.js';
import { addModelCommands } from './program-models.js';
import { addServiceCommands } from './program-service.js';
import { addTrainCommands } from './program-train.js';
import type { ReportProgress } from './progress.js';
import { addWorkloadFlags } from './workload-flags.js';

function addRuntimeCommands(program: Command, setCode: SetExitCode): void {
  const runtimeEnv = envHelp(RUNTIME_ENV);
  program
    .command('devices')
    .description(
      'every backend (available or not, with the reason) and each device with its measured figures',
    )
    .addOption(jsonOption())
    .addOption(
      new Option('--backends <list>', 'backends to open, e.g. cpu,cuda').argParser(backendsParser(false)),
    )
    .option('--no-calibrate', 'skip measuring peak rates (use cached or none)')
    .addHelpText('after', runtimeEnv)
    .action(async (opts: { json?: boolean; backends?: string; calibrate: boolean }) => {
      setCode(await (await import('./runtime-commands.js')).devicesCommand(opts));
    });

  program
    .command('demo')
    .description('devices, then a checked 1024² GEMM through the runtime')
    .addOption(jsonOption())
    .addHelpText('after', runtimeEnv)
    .action(async (opts: { json?: boolean }) => {
      setCode(await (await import('./runtime-commands.js')).demoCommand(opts));
    });

  const run = program
    .command('run')
    .description('run one computation on the local devices (no service needed)');
  run
    .command('gemm')
    .description('C = A·B on random n×n inputs, timed, with sampled rows checked in float64')
    .addOption(jsonOption())
    .addOption(new Option('--n <n>', 'matrix size').default(1024).argParser(intParser(1, 65536)))
    .addOption(new Option('--dtype <dtype>', 'element type').default('f32').argParser(dtypeParser))
    .addOption(
      new Option(
        '--device <device>',
        'cpu, cuda, webgpu or a device id (default: the scheduler picks)',
      ).argParser(deviceParser(false)),
    )
    .addOption(
      new Option('--reps <n>', 'timed repetitions (median reported)')
        .default(3)
        .argParser(intParser(1, 1000)),
    )
    .addOption(
      new Option('--precision <mode>', 'tf32 lets f32 GEMM use TF32 tensor cores')
        .default('default')
        .argParser(oneOfParser(['default', 'tf32'] as const)),
    )
    .addOption(
      new Option(
        '--trace [file]',
        'write a Chrome trace (default file: .tandem/traces/gemm-<time>.trace.json)',
      ),
    )
    .addHelpText('after', runtimeEnv)
    .action(async (opts: import('./runtime-commands.js').GemmOptions) => {
      setCode(await (await import('./runtime-commands.js')).runGemmCommand(opts));
    });
  const workloads = [
    ['md', 'Lennard-Jones molecular dynamics (LAMMPS bench/in.lj by default)', 'runMdCommand'],
    ['option', 'option price by Monte Carlo (Philox4x32-10), with standard error', 'runOptionCommand'],
    ['var', 'portfolio value-at-risk and expected shortfall under correlated GBM', 'runVarCommand'],
  ] as const;
  for (const [name, what, fn] of workloads) {
    const cmd = run.command(name).description(what).addOption(jsonOption());
    addWorkloadFlags(cmd, name)
      .addHelpText('after', runtimeEnv)
      .action(async (opts: import('./workload-commands.js').WorkloadOptions) => {
        setCode(await (await import('./workload-commands.js'))[fn](opts));
      });
  }

  const bench = program
    .command('bench')
    .description('benchmarks side by side with the alternative (see bench/RESULTS.md)');
  const benchCmd = (name: 'overhead' | 'gemm' | 'sched', what: string): Command =>
    bench
      .command(name)
      .description(what)
      .addOption(jsonOption())
      .addHelpText('after', runtimeEnv)
      .action(async (opts: { json?: boolean }, cmd: Command) => {
        const mod = (await import(`../../bench/${name}.js`)) as {
          main(argv: string[], progress?: ReportProgress): Promise<number>;
        };
        const { reportTo, withProgress } = await import('./progress.js');
        const json = opts.json === true;
        setCode(
          await withProgress(`bench ${name}`, { json }, (bar) => mod.main(givenArgv(cmd), reportTo(bar))),
        );
      });
  benchCmd('overhead', 'runtime cost per task: independent tasks, one chain, 8 chains')
    .addOption(
      new Option('--tasks <n>', 'tasks per pattern').default(200_000).argParser(intParser(1, 10_000_000)),
    )
    .addOption(
      new Option('--backends <list>', 'backends to open').default('cpu').argParser(backendsParser(false)),
    )
    .addOption(new Option('--scheduler <name>', 'scheduler policy').default('eager'));
  benchCmd('gemm', 'GEMM through rt.submit beside the library called directly (OpenBLAS, cuBLAS, WGSL)')
    .addOption(
      new Option('--device <kind>', 'cpu, cuda or webgpu').default('cpu').argParser(deviceParser(false)),
    )
    .addOption(
      new Option('--n <n>', 'matrix size (default: 2048 cpu, 8192 cuda, 4096 webgpu)').argParser(
        intParser(16, 32768),
      ),
    )
    .addOption(
      new Option('--dtype <dtype>', 'element type (default: f32 cpu, bf16 cuda)').argParser(dtypeParser),
    )
    .addOption(new Option('--reps <n>', 'timed repetitions').argParser(intParser(1, 1000)))
    .addOption(
      new Option('--precision <mode>', 'cuda: tf32 for f32').argParser(
        oneOfParser(['default', 'tf32'] as const),
      ),
    )
    .addOption(new Option('--rounds <n>', 'webgpu: rounds').argParser(intParser(1, 1000)));
  benchCmd('sched', 'scheduling policies: StarPU-table simulations, decision cost, a mixed CPU+GPU graph')
    .addOption(new Option('--table <name>', 'timing table, or all'))
    .addOption(new Option('--nt <n>', 'tiles per side').argParser(intParser(2, 200)))
    .addOption(new Option('--cpus <n>', 'simulated CPU workers').argParser(intParser(0, 256)))
    .addOption(new Option('--gpus <n>', 'simulated GPUs').argParser(intParser(0, 64)))
    .option('--skip-mixed', 'skip the mixed graph on the real devices')
    .option('--real', 'tiled Cholesky on a real device instead')
    .addOption(new Option('--n <n>', '--real: matrix size').argParser(intParser(64, 1 << 17)))
    .addOption(new Option('--tile <n>', '--real: tile size').argParser(intParser(16, 1 << 16)))
    .addOption(
      new Option('--device <kind>', 'cuda for the mixed graph on a GPU').argParser(deviceParser(false)),
    )
    .addOption(new Option('--scheduler <name>', '--real: scheduler policy'))
    .addOption(new Option('--small <n>', 'mixed: small GEMMs').argParser(intParser(1, 1e6)))
    .addOption(new Option('--large <n>', 'mixed: large GEMMs').argParser(intParser(1, 1e4)))
    .addOption(new Option('--small-n <n>', 'mixed: small GEMM size').argParser(intParser(1, 4096)))
    .addOption(new Option('--large-n <n>', 'mixed: large GEMM size').argParser(intParser(1, 16384)))
    .addOption(new Option('--threads <n>', 'mixed: CPU worker threads').argParser(intParser(1, 256)));

  program
    .command('models')
    .description('the performance models the runtime learned and the bus model, from the cache directory')
    .addOption(jsonOption())
    .option('--cache-dir <dir>', 'cache directory', '.tandem/cache')
    .option('--op <op>', 'only this kernel')
    .action(async (opts: { json?: boolean; cacheDir?: string; op?: string }) => {
      setCode(await (await import('./model-commands.js')).modelsCommand(opts));
    });
}

/** This package's version (dist/src/cli → the package root). */
function packageVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as {
      version?: unknown;
    };
    return typeof pkg.version === 'string' ? pkg.version : 'unknown';
  } catch {
    return 'unknown';
  }
}

/** The whole command tree. `setCode` receives each action's exit code. */
export function buildProgram(setCode: SetExitCode): Command {
  const program = new Command('tandem')
    .description('CPUs, CUDA GPUs and WebGPU devices working in tandem on one pool of compute jobs')
    .version(packageVersion(), '-V, --version', 'print the version')
    .showSuggestionAfterError(true)
    .exitOverride()
    // Errors are reported once, by main.ts (with a stable code, and as JSON under --json).
    .configureOutput({ outputError: () => undefined })
    .addHelpText(
      'after',
      `\nEvery command takes --help (prints, runs nothing); every one that ends with a result, --json.\nQuick start: README.md; \`tandem <command> --help\` for flags, defaults and environment.\n`,
    );
  addRuntimeCommands(program, setCode);
  addTrainCommands(program, setCode);
  addServiceCommands(program, setCode);
  addModelCommands(program, setCode);
  return program;
}
