/**
 * `tandem <command>`: a client of the runtime (devices, run, bench) or of the service (serve,
 * submit, jobs ...). Every command takes --json for machine-readable output.
 */
import { TandemError } from '../core/errors.js';
import { reportError, unknownSub, type Command } from './output.js';
import { shouldSupervise, supervise } from './supervisor.js';

/**
 * Loads a command module lazily so that `tandem devices` never pays for the service's imports, and the
 * `serve` supervisor for neither (it only forks the server: see supervisor.ts).
 */
function lazy(path: string, name: string): Command {
  return async (argv) => {
    const mod = (await import(path)) as Record<string, Command | undefined>;
    const cmd = mod[name];
    if (!cmd) throw new TandemError('TANDEM_ERR_INTERNAL', `${path} does not export ${name}`);
    return cmd(argv);
  };
}

const RUN: Record<string, Command> = {
  gemm: lazy('./runtime-commands.js', 'runGemmCommand'),
  md: lazy('./workload-commands.js', 'runMdCommand'),
  option: lazy('./workload-commands.js', 'runOptionCommand'),
  var: lazy('./workload-commands.js', 'runVarCommand'),
};

const BENCH: Record<string, Command> = {
  overhead: lazy('../../bench/overhead.js', 'main'),
  gemm: lazy('../../bench/gemm.js', 'main'),
  sched: lazy('../../bench/sched.js', 'main'),
};

const COMMANDS: Record<string, Command> = {
  devices: lazy('./runtime-commands.js', 'devicesCommand'),
  demo: lazy('./runtime-commands.js', 'demoCommand'),
  run: (argv) => (RUN[argv[0] ?? ''] ?? (() => unknownSub('run', argv[0], Object.keys(RUN))))(argv.slice(1)),
  bench: (argv) =>
    (BENCH[argv[0] ?? ''] ?? (() => unknownSub('bench', argv[0], Object.keys(BENCH))))(argv.slice(1)),
  models: lazy('./model-commands.js', 'modelsCommand'),
  // Under a supervisor that relaunches the server after a lost device or a crash, unless opted out.
  serve: (argv) =>
    shouldSupervise(argv, process.env) ? supervise(argv) : lazy('./serve-command.js', 'serveCommand')(argv),
  submit: lazy('./service-commands.js', 'submitCommand'),
  jobs: lazy('./service-commands.js', 'jobsCommand'),
  status: lazy('./service-commands.js', 'statusCommand'),
  cancel: lazy('./service-commands.js', 'cancelCommand'),
  trace: lazy('./service-commands.js', 'traceCommand'),
  keys: lazy('./service-commands.js', 'keysCommand'),
  agent: lazy('./agent-commands.js', 'agentCommand'),
  autoscale: lazy('./agent-commands.js', 'autoscaleCommand'),
};

const HELP = `tandem — CPUs, CUDA GPUs and WebGPU devices working in tandem

  tandem devices                          every backend, with its devices and measured figures
  tandem run gemm --n 2048 --dtype f32 [--device cpu] [--trace out.json]
  tandem bench overhead | gemm --device cpu --n 2048 | sched
  tandem serve [--port 8080] [--data-dir .tandem/data] [--no-supervise] [--metrics-listen 127.0.0.1:9464]
  tandem submit <type> [--param k=v ...] [--wait]    tandem jobs | status <id> | cancel <id> | trace <id> -o f.json
  tandem serve --queue redis://... --pg postgres://...   tandem agent --queue redis://... [--pg ...]
  tandem autoscale --queue redis://... --min 0 --max 4

Every command takes --json.`;

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === 'help' || name === '--help' || name === '-h') {
    process.stdout.write(`${HELP}\n`);
    return name ? 0 : 1;
  }
  const cmd = COMMANDS[name];
  if (!cmd)
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      `unknown command ${JSON.stringify(name)}; run \`tandem help\``,
    );
  return cmd(rest);
}

const argv = process.argv.slice(2);
main(argv).then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    process.exitCode = reportError(e, argv.includes('--json'));
  },
);
