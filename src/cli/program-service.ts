/**
 * The service's commands in the `tandem` tree: serve (under its supervisor), the clients of a running
 * service (submit, jobs, status, cancel, trace, keys, types) and the scaled-out processes (agent,
 * autoscale). As in program.ts, only declarations here; each action imports its code.
 */
import { Option, type Command } from 'commander';
import {
  CLIENT_ENV,
  RUNTIME_ENV,
  backendsParser,
  envHelp,
  givenArgv,
  intParser,
  jsonOption,
  numberParser,
  oneOfParser,
  type SetExitCode,
} from './cli-options.js';
import { DEFAULT_POLICY } from '../service/autoscale/signal.js';
import { JOB_STATES } from '../service/http/schemas.js';
import { addServingClients } from './program-serving.js';

const SERVE_ENV: ReadonlyArray<readonly [string, string]> = [
  ['TANDEM_PORT', 'port (default 8080); --port wins'],
  ['TANDEM_HOST', 'address to bind (default 127.0.0.1); --host wins'],
  ['TANDEM_DATA_DIR', 'data directory (default .tandem/data); --data-dir wins'],
  ['TANDEM_BACKENDS', "backends to open, or 'none'; --backends wins"],
  ['TANDEM_MAX_RUNNING', 'jobs running at once (default 2); --max-running wins'],
  ['TANDEM_CALIBRATE', '0 skips measuring peak rates'],
  ['TANDEM_DURABILITY', 'full | normal (SQLite synchronous)'],
  ['TANDEM_HW_RULES', 'hardware rules, class=deviceClass[!],...'],
  ['TANDEM_CPU_THREADS', 'CPU backend worker threads'],
  ['TANDEM_RATE_LIMIT', 'requests per second per key [:burst]'],
  ['TANDEM_MAX_QUEUED', 'default tenant quota of queued jobs'],
  ['TANDEM_SUPERVISE', '0 runs without the relaunching supervisor'],
  ['TANDEM_RESTART_LIMIT', 'unexpected exits per minute before the supervisor gives up (default 5)'],
  ['TANDEM_METRICS_ADDR', 'host:port of a keyless GET /metrics listener; --metrics-listen wins'],
  [
    'TANDEM_LANE_SPIN_US',
    'keep the event loop polling this long (µs) after each infer request, for latency (0: off)',
  ],
  ['TANDEM_REQUEST_TIMEOUT_MS', 'a request (headers and body) must arrive within this (default 30000)'],
  ['TANDEM_SEMI_SPACE_MB', "server's V8 young generation in MiB (default 16, 0: V8's)"],
  ['TANDEM_API_KEYS', 'scaled-out mode (--queue): tenant=key,...'],
  ...RUNTIME_ENV,
];

/** --url/--key (from TANDEM_URL/TANDEM_KEY when not given) and --json. */
export function clientCommand(parent: Command, name: string, what: string): Command {
  return parent
    .command(name)
    .description(what)
    .addOption(jsonOption())
    .addOption(new Option('--url <url>', 'service URL (default: http://127.0.0.1:8080)').env('TANDEM_URL'))
    .addOption(new Option('--key <key>', 'API key').env('TANDEM_KEY'))
    .addHelpText('after', envHelp(CLIENT_ENV));
}

type Opts<T> = T & Readonly<Record<string, unknown>>;

function addServe(program: Command, setCode: SetExitCode): void {
  program
    .command('serve')
    .description(
      'the job service: HTTP API, dashboard and the local devices (relaunched after a lost device)',
    )
    .addOption(jsonOption('one JSON line per start: url, dataDir, adminKey, pid, restarts'))
    .addOption(
      new Option('--port <port>', 'port, 0 for any free one (default: 8080)').argParser(intParser(0, 65535)),
    )
    .option('--host <host>', 'address to bind (default: 127.0.0.1)')
    .option('--data-dir <dir>', 'jobs, keys and results (default: .tandem/data)')
    .option('--web-dir <dir>', 'dashboard files (default: web/dist of this package)')
    .addOption(new Option('--backends <list>', "backends to open, or 'none'").argParser(backendsParser(true)))
    .option('--no-calibrate', 'skip measuring peak rates')
    .addOption(
      new Option('--max-running <n>', 'jobs running at once (default: 2)').argParser(intParser(1, 1024)),
    )
    .option('--no-supervise', 'run in this process, without the relaunching supervisor')
    .option(
      '--metrics-listen <host:port>',
      'also serve GET /metrics without a key on this address (keep it private: tenant labels)',
    )
    .addOption(
      new Option('--queue <url>', 'scaled-out control plane: redis://... (needs --pg)').helpGroup(
        'Scaled out:',
      ),
    )
    .addOption(new Option('--pg <url>', 'scaled-out: postgres://... job store').helpGroup('Scaled out:'))
    .addOption(
      new Option('--prefix <name>', 'scaled-out: queue key prefix (default: tandem)').helpGroup(
        'Scaled out:',
      ),
    )
    .addOption(
      new Option('--reconcile-ms <ms>', 'scaled-out: reconcile interval (default: 30000)')
        .argParser(intParser(100, 3_600_000))
        .helpGroup('Scaled out:'),
    )
    .addHelpText('after', envHelp(SERVE_ENV))
    .action(async (opts: Opts<import('./serve-command.js').ServeOptions>, cmd: Command) => {
      const { shouldSupervise, supervise } = await import('./supervisor.js');
      const argv = givenArgv(cmd);
      // The supervisor forks `tandem serve <argv>` (this same parsing, in the child) and relaunches it.
      if (shouldSupervise(argv, process.env)) setCode(await supervise(argv));
      else setCode(await (await import('./serve-command.js')).serveCommand(opts));
    });
}

function addClients(program: Command, setCode: SetExitCode): void {
  const svc = (): Promise<typeof import('./service-commands.js')> => import('./service-commands.js');
  clientCommand(program, 'submit', 'submit a job; --wait follows it to the end with a progress bar')
    .argument('<type>', 'job type (`tandem types` lists them)')
    .addOption(
      new Option(
        '-p, --param <key=value>',
        'a parameter (repeatable; numbers and booleans parsed)',
      ).argParser((v: string, prev: string[] | undefined) => [...(prev ?? []), v]),
    )
    .option('--params <json>', 'parameters as one JSON object (--param entries go on top)')
    .addOption(
      new Option('--priority <n>', 'priority, higher first (default: 0)').argParser(intParser(-100, 100)),
    )
    .option('--idempotency-key <key>', 'a retry with the same key returns the first job')
    .option('-w, --wait', 'wait for the end and print the result')
    .action(async (type: string, opts: Opts<import('./service-commands.js').SubmitOptions>) => {
      setCode(await (await svc()).submitCommand(type, opts));
    });
  clientCommand(program, 'jobs', 'list jobs, newest first (your tenant; all for an admin)')
    .addOption(new Option('--state <state>', JOB_STATES.join(', ')).argParser(oneOfParser(JOB_STATES)))
    .addOption(new Option('--limit <n>', 'at most this many').default(20).argParser(intParser(1, 1000)))
    .option('--tenant <name>', 'admin: only this tenant')
    .action(async (opts: Opts<import('./service-commands.js').JobsOptions>) => {
      setCode(await (await svc()).jobsCommand(opts));
    });
  clientCommand(program, 'status', "one job's state, progress, device and times")
    .argument('<id>', 'job id')
    .action(async (id: string, opts: Opts<import('./service-commands.js').ClientOptions>) => {
      setCode(await (await svc()).statusCommand(id, opts));
    });
  clientCommand(program, 'cancel', 'cancel a queued or running job')
    .argument('<id>', 'job id')
    .action(async (id: string, opts: Opts<import('./service-commands.js').ClientOptions>) => {
      setCode(await (await svc()).cancelCommand(id, opts));
    });
  clientCommand(program, 'trace', "a job's Chrome trace (open in https://ui.perfetto.dev)")
    .argument('<id>', 'job id')
    .option('-o, --output <file>', 'where to write it (default: .tandem/traces/<id>.trace.json)')
    .action(
      async (id: string, opts: Opts<import('./service-commands.js').ClientOptions & { output?: string }>) => {
        setCode(await (await svc()).traceCommand(id, opts));
      },
    );
  clientCommand(program, 'types', 'job types with their parameter schemas (from the service, or this build)')
    .option('--local', "this build's registry even when TANDEM_URL is set")
    .action(async (opts: Opts<import('./service-commands.js').ClientOptions & { local?: boolean }>) => {
      setCode(await (await import('./types-command.js')).typesCommand(opts));
    });

  const keys = program.command('keys').description('tenants and API keys (admin)');
  clientCommand(keys, 'create', 'a new tenant with its first key, or another key of an existing tenant')
    .argument('<tenant>', 'tenant name')
    .addOption(
      new Option('--role <role>', 'role of a new tenant (default: user)').argParser(
        oneOfParser(['user', 'admin'] as const),
      ),
    )
    .addOption(new Option('--weight <w>', 'fair-share weight of a new tenant').argParser(numberParser))
    .addOption(new Option('--max-jobs <n>', 'jobs running at once').argParser(intParser(1, 10_000)))
    .addOption(new Option('--max-memory <bytes>', 'device memory quota in bytes').argParser(numberParser))
    .addOption(new Option('--max-queued <n>', 'queued jobs quota').argParser(intParser(1, 10_000_000)))
    .addOption(
      new Option('--max-timeout <seconds>', 'longest timeoutSeconds its jobs may ask for').argParser(
        intParser(1, 31_536_000),
      ),
    )
    .option('--label <text>', "the key's label")
    .action(async (tenant: string, opts: Opts<import('./service-commands.js').KeyCreateOptions>) => {
      setCode(await (await svc()).keysCreateCommand(tenant, opts));
    });
  clientCommand(keys, 'list', 'tenants with their roles and quotas').action(
    async (opts: Opts<import('./service-commands.js').ClientOptions>) => {
      setCode(await (await svc()).keysListCommand(opts));
    },
  );
  clientCommand(keys, 'revoke', 'revoke a key')
    .argument('<key-id>', 'key id (shown by keys create)')
    .action(async (keyId: string, opts: Opts<import('./service-commands.js').ClientOptions>) => {
      setCode(await (await svc()).keysRevokeCommand(keyId, opts));
    });
}

function addScaledOut(program: Command, setCode: SetExitCode): void {
  program
    .command('agent')
    .description('a node agent: advertises the local devices and runs the queued jobs that fit them')
    .addOption(new Option('--queue <url>', 'redis://host:6379 (required)').makeOptionMandatory())
    .option('--pg <url>', 'postgres://... job store (default: queue only)')
    .option('--name <name>', 'agent name (default: <hostname>-<pid>)')
    .addOption(
      new Option('--backends <list>', "backends to open, or 'none'")
        .default('cpu,cuda,webgpu')
        .argParser(backendsParser(true)),
    )
    .addOption(new Option('--concurrency <n>', 'jobs at once').default(4).argParser(intParser(1, 1024)))
    .addOption(
      new Option('--cpu-threads <n>', 'CPU backend worker threads').default(2).argParser(intParser(1, 256)),
    )
    .option('--prefix <name>', 'queue key prefix', 'tandem')
    .addOption(
      new Option('--grace-ms <ms>', 'on SIGTERM, time to finish running jobs')
        .default(10_000)
        .argParser(intParser(0, 600_000)),
    )
    .addHelpText('after', envHelp(RUNTIME_ENV))
    .action(async (opts: Opts<import('./agent-commands.js').AgentOptions>) => {
      setCode(await (await import('./agent-commands.js')).agentCommand(opts));
    });
  program
    .command('autoscale')
    .description('starts and stops agents on this machine from the queue depth')
    .addOption(new Option('--queue <url>', 'redis://host:6379 (required)').makeOptionMandatory())
    .option('--pg <url>', 'postgres://... passed on to the agents')
    .addOption(
      new Option('--min <n>', 'fewest agents').default(DEFAULT_POLICY.min).argParser(intParser(0, 256)),
    )
    .addOption(
      new Option('--max <n>', 'most agents').default(DEFAULT_POLICY.max).argParser(intParser(1, 256)),
    )
    .option('--class <class>', 'device class the agents serve', 'cpu')
    .addOption(
      new Option('--jobs-per-agent <n>', 'queued jobs per agent')
        .default(DEFAULT_POLICY.jobsPerAgent)
        .argParser(intParser(1, 1 << 20)),
    )
    .addOption(
      new Option('--idle-ms <ms>', 'idle time before an agent is stopped')
        .default(DEFAULT_POLICY.idleMs)
        .argParser(intParser(0, 3_600_000)),
    )
    .option('--prefix <name>', 'queue key prefix', 'tandem')
    .option('--agent-args <args>', 'extra arguments for each agent, e.g. "--backends cpu --concurrency 8"')
    .action(async (opts: Opts<import('./agent-commands.js').AutoscaleOptions>) => {
      setCode(await (await import('./agent-commands.js')).autoscaleCommand(opts));
    });
}

export function addServiceCommands(program: Command, setCode: SetExitCode): void {
  addServe(program, setCode);
  addClients(program, setCode);
  addServingClients(program, setCode);
  addScaledOut(program, setCode);
}
