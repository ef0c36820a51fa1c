/**
 * `tandem bench sched`: scheduling quality and cost.
 *   (default)  simulation of tiled Cholesky (40x40 tiles) on 8 CPU cores + 2 GPUs from StarPU's
 *              published timings, every policy against the lower bound; dmda decision cost; the mixed
 *              small/large graph on the real CPU + a GPU (real CUDA when present, else emulated)
 *   --table <name|all> --nt 40 --cpus 8 --gpus 2       simulation settings
 *   --skip-mixed                                       simulation and decision cost only
 *   --small 3000 --large 16 --small-n 32 --large-n 768 (2048 with --device cuda)   mixed graph sizes
 *   --real --n 32768 --tile 2048 --device cuda         tiled Cholesky vs one potrf call, same run
 */
import { availableParallelism } from 'node:os';
import { intOption, parse, print, table } from '../src/cli/output.js';
import type { ReportProgress } from '../src/cli/progress.js';
import { STARPU_TABLES, DEFAULT_TABLE } from '../src/devices/sim/tables.js';
import { runDecisionCost, runSimulation, type SimReport } from './sched-sim.js';
import { runMixed, runRealCholesky } from './sched-real.js';

const f = (x: number, d = 2): string => x.toFixed(d);

function simText(r: SimReport): string {
  const head = `Cholesky ${r.nt}x${r.nt} tiles of ${STARPU_TABLES[r.table]!.tile} on ${r.cpus} CPU cores + ${r.gpus} GPUs — ${r.description}
lower bound ${f(r.lowerBoundMs, 0)} ms = max(critical path ${f(r.criticalPathMs, 0)} ms, area bound ${f(r.areaBoundMs, 0)} ms)`;
  const rows = [
    ['policy', 'makespan ms', 'x bound', 'GFLOP/s', 'tasks cpu/gpu', 'busy cpu/gpu', 'transfers'],
    ...r.rows.map((x) => [
      x.policy,
      f(x.makespanMs, 0),
      f(x.ratio, 3),
      f(x.gflops, 0),
      `${x.cpuTasks}/${x.gpuTasks}`,
      `${f(x.busyCpu * 100, 0)}%/${f(x.busyGpu * 100, 0)}%`,
      String(x.transfers),
    ]),
  ];
  return `${head}\n${table(rows)}`;
}

/**
 * `progress` is the CLI's bar (`tandem bench sched` on a terminal): by stage only (the simulations run
 * synchronously); a direct run passes none.
 */
export async function main(argv: string[], progress: ReportProgress = () => undefined): Promise<number> {
  const { values } = parse(argv, {
    table: { type: 'string' },
    nt: { type: 'string' },
    cpus: { type: 'string' },
    gpus: { type: 'string' },
    'skip-mixed': { type: 'boolean' },
    real: { type: 'boolean' },
    n: { type: 'string' },
    tile: { type: 'string' },
    device: { type: 'string' },
    scheduler: { type: 'string' },
    small: { type: 'string' },
    large: { type: 'string' },
    'small-n': { type: 'string' },
    'large-n': { type: 'string' },
    threads: { type: 'string' },
  });
  const json = values['json'] === true;
  const device = typeof values['device'] === 'string' ? values['device'] : undefined;
  if (values['real']) {
    const r = await runRealCholesky({
      n: intOption(values['n'], 'n', 8192, 64, 1 << 17),
      tile: intOption(values['tile'], 'tile', 2048, 16, 1 << 16),
      device: device ?? 'cuda',
      scheduler: typeof values['scheduler'] === 'string' ? values['scheduler'] : 'dmdas',
    });
    print(json, r, () =>
      table([
        ['f32 Cholesky', 'n', 'tile', 'ms', 'TFLOP/s'],
        [
          `task graph (${r.device}, dmdas)`,
          String(r.n),
          String(r.tile),
          f(r.tiledMs, 1),
          f(r.tiledTflops, 3),
        ],
        [`one potrf call (${r.device})`, String(r.n), String(r.n), f(r.singleMs, 1), f(r.singleTflops, 3)],
        ['ratio graph / single (TFLOP/s)', '', '', '', f(r.ratio, 3)],
      ]),
    );
    return 0;
  }
  const tables =
    values['table'] === 'all' ? Object.keys(STARPU_TABLES) : [String(values['table'] ?? DEFAULT_TABLE)];
  const nt = intOption(values['nt'], 'nt', 40, 2, 200);
  const cpus = intOption(values['cpus'], 'cpus', 8, 0, 256);
  const gpus = intOption(values['gpus'], 'gpus', 2, 0, 64);
  progress(0, 'simulations');
  const sims = tables.map((t) => runSimulation(t, nt, cpus, gpus));
  progress(0.3, 'decision cost');
  const cost = runDecisionCost();
  progress(0.4, values['skip-mixed'] ? 'done' : 'mixed graph on the real devices');
  const mixed = values['skip-mixed']
    ? null
    : await runMixed({
        cuda: device === 'cuda',
        small: intOption(values['small'], 'small', 3000, 1, 1e6),
        large: intOption(values['large'], 'large', 16, 1, 1e4),
        smallN: intOption(values['small-n'], 'small-n', 32, 1, 4096),
        // "Large" is relative to the GPU: 768² is worth moving to the emulated 20 TFLOP/s GPU, an H200
        // needs 2048² before a GEMM is more than its launch and copies.
        largeN: intOption(values['large-n'], 'large-n', device === 'cuda' ? 2048 : 768, 1, 16384),
        threads: intOption(values['threads'], 'threads', Math.max(1, availableParallelism() - 1), 1, 256),
      });
  progress(1, 'done');
  print(json, { simulation: sims, decisionCost: cost, mixed }, () => {
    const parts = sims.map(simText);
    parts.push(
      `dmda decision cost, ${cost.devices} devices, ${cost.queued} queued tasks: dmda ${f(cost.dmdaUs)} µs, dmdas ${f(cost.dmdasUs)} µs, dmdas with placement reasons (traced) ${f(cost.dmdasTracedUs)} µs per task`,
    );
    if (mixed) {
      const byPolicy = Object.fromEntries(mixed.rows.map((r) => [r.policy, r.ms]));
      parts.push(
        `mixed graph on the real CPU (${mixed.threads} worker threads) + ${mixed.gpu}: ${mixed.small} GEMMs ${mixed.smallN}² and ${mixed.large} GEMMs ${mixed.largeN}² (f32), median of 3\n` +
          table([
            ['policy', 'ms', 'small on GPU', 'large on GPU', 'vs dmdas'],
            ...mixed.rows.map((r) => [
              r.policy,
              f(r.ms, 1),
              `${r.smallOnGpu}/${mixed.small}`,
              `${r.largeOnGpu}/${mixed.large}`,
              f(r.ms / byPolicy['dmdas']!, 2),
            ]),
          ]),
      );
    }
    return parts.join('\n\n');
  });
  return 0;
}

// `node dist/bench/sched.js ...` runs it directly (the lead's H200 run); `tandem bench sched` imports main.
if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (e: unknown) => {
      process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
      process.exitCode = 1;
    },
  );
}
