/**
 * A 10^6-path European price through the service API end to end: a real `tandem serve` process on
 * loopback, each price a durable `option` job submitted with `?wait` (the answer carries the result), one
 * after another over a keep-alive connection; p50/p99 client latency, and the server's own split.
 *   node dist/bench/risk-service.js [--device cuda|cpu] [--runs 1000] [--paths 1000000] [--durability full|normal]
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { quantile } from './quantile.js';

const { values } = parseArgs({
  options: {
    device: { type: 'string', default: 'cuda' },
    runs: { type: 'string', default: '1000' },
    paths: { type: 'string', default: '1000000' },
    durability: { type: 'string', default: 'full' },
  },
});
const device = values.device!;
const runs = Number(values.runs);
const paths = Number(values.paths);
const dir = mkdtempSync(join(tmpdir(), 'tandem-risk-svc-'));
const child = spawn(
  process.execPath,
  [
    // Extra node flags for the server only (e.g. --cpu-prof to profile it): TANDEM_BENCH_SERVE_NODE_ARGS.
    ...(process.env.TANDEM_BENCH_SERVE_NODE_ARGS?.split(' ').filter(Boolean) ?? []),
    join(process.cwd(), 'dist', 'src', 'cli', 'main.js'),
    'serve',
    '--port',
    '0',
    '--data-dir',
    dir,
    '--json',
  ],
  {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: {
      ...process.env,
      TANDEM_LOG: 'silent',
      TANDEM_BACKENDS: device,
      TANDEM_DURABILITY: values.durability!,
      TANDEM_RATE_LIMIT: '1000000',
      // As `tandem serve` runs for users: under its supervisor, which gives the server process its
      // Node flags (a 16 MiB young generation); CPU is read from the server's pid on its --json line.
      // TANDEM_SUPERVISE=0 in the environment runs the server directly instead.
    },
  },
);
const line = await new Promise<string>((resolve, reject) => {
  createInterface({ input: child.stdout! }).once('line', resolve);
  child.once('exit', (c) => reject(new Error(`serve exited with ${c}`)));
});
const first = JSON.parse(line) as { url: string; pid?: number };
const url = new URL(first.url);
// The server process itself (`tandem serve` is its supervisor; the line names the server's pid).
const serverPid = first.pid ?? child.pid;
const key = readFileSync(join(dir, 'admin-key.txt'), 'utf8').trim();
const agent = new Agent({ keepAlive: true, maxSockets: 1 });

interface Answer {
  state: string;
  runSeconds: number | null;
  waitSeconds: number | null;
  result?: { price: number; stdError: number; analytic: number | null };
  error?: unknown;
}

/** CPU seconds (user + system) the server has used: all its threads, and its main (event-loop) thread. */
function serverCpu(): { all: number; main: number } | null {
  const pid = serverPid;
  const file = `/proc/${pid}/task/${pid}/stat`;
  if (pid === undefined || !existsSync(file)) return null; // Linux only
  // Fields after the command's closing parenthesis: utime and stime are the 12th and 13th, in ticks.
  const ticks = (path: string): number => {
    const text = readFileSync(path, 'utf8');
    const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return Number(f[11]) + Number(f[12]);
  };
  const hz = 100; // USER_HZ on Linux
  return { all: ticks(`/proc/${pid}/stat`) / hz, main: ticks(file) / hz };
}

/** Sum and count of a Prometheus histogram series (`labels` as printed, e.g. '{type="option"}', or ''). */
function hist(metrics: string, name: string, labels: string): { sum: number; count: number } {
  const value = (suffix: string): number => {
    const line = metrics.split('\n').find((l) => l.startsWith(`${name}${suffix}${labels} `));
    return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0;
  };
  return { sum: value('_sum'), count: value('_count') };
}

function getText(path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    // /metrics needs the admin key.
    request(
      { host: url.hostname, port: url.port, path, agent, headers: { authorization: `Bearer ${key}` } },
      (res) => {
        let data = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (data += c));
        res.on('end', () => resolve(data));
      },
    )
      .on('error', reject)
      .end();
  });
}

function post(body: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: '/v1/jobs?wait=30',
        method: 'POST',
        agent,
        headers: {
          authorization: `Bearer ${key}`,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
        },
      },
      (res) => {
        let data = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (data += c));
        res.on('end', () => {
          if (res.statusCode !== 202 && res.statusCode !== 200)
            reject(new Error(`HTTP ${res.statusCode}: ${data}`));
          else resolve(JSON.parse(data) as Answer);
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const job = (seed: number): string =>
  JSON.stringify({
    type: 'option',
    params: {
      spot: 100,
      strike: 100,
      rate: 0.05,
      vol: 0.2,
      maturity: 1,
      paths,
      device,
      seed,
      antithetic: false,
    },
  });
const q = quantile;
try {
  // The first job waits for the runtime to open and the kernel to compile; then a warm-up.
  for (let k = 0; k < 50; k++) {
    const a = await post(job(k));
    if (a.state !== 'succeeded') throw new Error(`warm-up job ${a.state}: ${JSON.stringify(a.error)}`);
  }
  const lat: number[] = [];
  const run: number[] = [];
  let last: Answer | null = null;
  const before = await getText('/metrics');
  const cpu0 = serverCpu();
  for (let k = 0; k < runs; k++) {
    const t0 = performance.now();
    const a = await post(job(1000 + k));
    lat.push(performance.now() - t0);
    if (a.state !== 'succeeded') throw new Error(`job ${a.state}: ${JSON.stringify(a.error)}`);
    run.push((a.runSeconds ?? NaN) * 1e3);
    last = a;
  }
  const cpu1 = serverCpu();
  const after = await getText('/metrics');
  lat.sort((x, y) => x - y);
  run.sort((x, y) => x - y);
  const r = last!.result!;
  console.log(
    `${paths}-path European price as a durable option job through the API (${device}, durability ${values.durability}, ${runs} runs one after another): client p50 ${q(lat, 0.5).toFixed(3)} ms, p99 ${q(lat, 0.99).toFixed(3)} ms, max ${lat[lat.length - 1]!.toFixed(3)} ms; job run time p50 ${q(run, 0.5).toFixed(3)} p99 ${q(run, 0.99).toFixed(3)} ms; last price ${r.price.toFixed(4)} ± ${r.stdError.toExponential(2)} (Black–Scholes ${r.analytic?.toFixed(4)})`,
  );
  // The server's own split over the timed runs: means from its metrics (histogram sum / count, the
  // warm-up subtracted), CPU per job from /proc (its event-loop thread, and all its threads).
  const mean = (name: string, labels = ''): string => {
    const [x, y] = [hist(before, name, labels), hist(after, name, labels)];
    return y.count > x.count ? (((y.sum - x.sum) / (y.count - x.count)) * 1e3).toFixed(3) : '?';
  };
  const split = [
    `request in the service ${mean('tandem_http_request_duration_seconds', '{method="POST",route="/v1/jobs"}')} ms`,
    `submit commit ${mean('tandem_submit_commit_seconds')} ms`,
    `queued ${mean('tandem_job_wait_seconds', '{type="option"}')} ms`,
    `run to commit ${mean('tandem_job_run_seconds', '{type="option",state="succeeded"}')} ms`,
  ];
  // The server's garbage collections in the window (prom-client's default GC histogram), by kind.
  const gc = (['minor', 'major', 'incremental', 'weakcb'] as const)
    .map((kind) => {
      const lbl = `{kind="${kind}"}`;
      const name = 'tandem_process_nodejs_gc_duration_seconds';
      const [x, y] = [hist(before, name, lbl), hist(after, name, lbl)];
      return y.count > x.count
        ? `${y.count - x.count} ${kind} (${((y.sum - x.sum) * 1e3).toFixed(2)} ms)`
        : null;
    })
    .filter((g) => g !== null);
  split.push(`GC ${gc.length ? gc.join(', ') : 'none'}`);
  if (cpu0 && cpu1)
    split.push(
      `CPU a job: event loop ${(((cpu1.main - cpu0.main) / runs) * 1e3).toFixed(3)} ms, all threads ${(((cpu1.all - cpu0.all) / runs) * 1e3).toFixed(3)} ms`,
    );
  console.log(`server (means over the timed runs): ${split.join(', ')}`);
} finally {
  agent.destroy();
  child.kill('SIGTERM');
  await new Promise((res) => child.once('exit', res));
  rmSync(dir, { recursive: true, force: true });
}
