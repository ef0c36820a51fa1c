/**
 * Overload: a real `tandem serve` on loopback (no devices, 8 running slots, `sleep` jobs of 0 ms, full
 * durability) flooded with submissions at a multiple of its sustainable rate, with load shedding off
 * (today's main: every submission accepted) and on, side by side in one run.
 *
 * 1. The sustainable rate: jobs/s the dispatcher drains from a backlog (shedding off, no submissions).
 * 2. For each mode and each multiple (2×, 5×): a fresh server, 3 s at half the rate (JIT, a measured
 *    drain rate), then autocannon at multiple × rate for --seconds while /healthz is probed every 50 ms
 *    and the server's RSS is read every 250 ms. Then submissions stop and the backlog drains (at most
 *    --drain seconds): every accepted job must be stored and succeed.
 * Prints one JSON line per run: accepted requests' p50/p99 (202 only), refused (429) with and without
 * Retry-After, /healthz p50/p99/max, RSS, the backlog at the end of the flood, and the store's counts.
 *
 * /healthz is probed from a process of its own (bench/health-probe.ts) by default: probed from this
 * process, its latency included this process's own event-loop delay behind autocannon's thousands of
 * requests a second (`--probe inline` measures it that way, as before, for comparison; `--probe both`
 * runs the two side by side). `--diag` loads bench/loop-diag.ts into the server and prints what its
 * main thread did during the flood (event-loop delay, stalls, GC pauses, /healthz as the server saw it).
 * `--node-options` is added to the server's NODE_OPTIONS (e.g. `--max-semi-space-size=16`).
 * Usage: node dist/bench/overload.js [--seconds 20] [--multiples 2,5] [--modes off,on] [--drain 60]
 *        [--rate N] [--probe process|inline|both] [--diag [--profile <dir>]] [--node-options=...]
 *        [--supervise] [--server-cpus 0,1]
 *        (pinned: `taskset -c 2-7 node dist/bench/overload.js --server-cpus 0,1`)
 */
import autocannon from 'autocannon';
import Database from 'better-sqlite3';
import { execFileSync, fork } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { ProbeResult } from './health-probe.js';
import { quantile } from './quantile.js';
import { serve, stop, type Server } from './service.js';

const BODY = JSON.stringify({ type: 'sleep', params: { ms: 0 } });
const SERVE_ARGS = ['--backends', 'none', '--max-running', '8'];
const CONNECTIONS = 64;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const PROBE_EVERY_MS = 50;
const HERE = new URL('.', import.meta.url).pathname;

export type ProbeMode = 'process' | 'inline' | 'both';

export interface RunOptions {
  probe: ProbeMode;
  diag: boolean;
  nodeOptions: string;
  /** With diag: write a CPU profile of each flood window here. */
  profileDir: string | null;
  /**
   * CPUs the server is pinned to (`taskset -a -p -c`, every thread; threads started later inherit it),
   * or null. With the benchmark itself started under `taskset -c <other cpus>`, the load generator and
   * the probe no longer take CPU time from the server: on a many-core host, the server's own figure.
   */
  serverCpus: string | null;
  /**
   * Run the server under `tandem serve`'s supervisor, as it runs by default: then it also gets the
   * supervisor's 16 MiB young generation (TANDEM_SEMI_SPACE_MB; --min-semi-space-size cannot be given
   * through NODE_OPTIONS). Off by default (`--no-supervise`, as every earlier figure was measured).
   */
  supervise: boolean;
}

/** Starts a server for the run, pinned to opts.serverCpus when given. */
async function startServer(dir: string, env: Record<string, string>, opts: RunOptions): Promise<Server> {
  const s = await serve(dir, [...SERVE_ARGS, ...(opts.supervise ? [] : ['--no-supervise'])], env);
  if (opts.serverCpus) execFileSync('taskset', ['-a', '-p', '-c', opts.serverCpus, String(s.pid)]);
  return s;
}

/** /healthz probed every 50 ms from a forked process until stop() (see bench/health-probe.ts). */
async function probeInProcess(url: string): Promise<{ stop(): Promise<ProbeResult> }> {
  const child = fork(join(HERE, 'health-probe.js'), [url, String(PROBE_EVERY_MS)], { stdio: 'inherit' });
  let ready!: () => void;
  const started = new Promise<void>((r) => (ready = r));
  const result = new Promise<ProbeResult>((resolve, reject) => {
    child.on('message', (m) => (m === 'ready' ? ready() : resolve(m as ProbeResult)));
    child.once('exit', (code) => reject(new Error(`health probe exited with ${code}`)));
  });
  await Promise.race([started, result]);
  return {
    stop: () => {
      child.send('stop');
      return result;
    },
  };
}

/** /healthz probed every 50 ms from this process (the load generator's): the old, unfair way. */
function probeInline(url: string): { stop(): Promise<number[]> } {
  const probes: number[] = [];
  let probing = true;
  const loop = (async () => {
    while (probing) {
      const t = performance.now();
      await (await fetch(`${url}/healthz`)).arrayBuffer();
      probes.push(performance.now() - t);
      await sleep(PROBE_EVERY_MS);
    }
  })();
  return {
    stop: async () => {
      probing = false;
      await loop;
      return probes;
    },
  };
}

function latencySummary(samples: number[]): { n: number; p50: number; p99: number; max: number } {
  const s = [...samples].sort((a, b) => a - b);
  const r1 = (x: number): number => Math.round(x * 10) / 10;
  return { n: s.length, p50: r1(quantile(s, 0.5)), p99: r1(quantile(s, 0.99)), max: r1(s.at(-1) ?? NaN) };
}

function serverEnv(mode: 'off' | 'on', opts: RunOptions, diagFile: string): Record<string, string> {
  const nodeOptions = [process.env['NODE_OPTIONS'] ?? '', opts.nodeOptions];
  if (opts.diag) nodeOptions.push(`--import=${join(HERE, 'loop-diag.js')}`);
  return {
    TANDEM_SHED: mode === 'on' ? '1' : '0',
    NODE_OPTIONS: nodeOptions.join(' ').trim(),
    ...(opts.diag ? { TANDEM_DIAG_OUT: diagFile } : {}),
    ...(opts.diag && opts.profileDir
      ? { TANDEM_DIAG_PROFILE: join(opts.profileDir, `${mode}-${Date.now()}.cpuprofile`) }
      : {}),
  };
}

interface Health {
  queued: number;
  running: number;
  load?: { drainPerSecond: number; backlogBudget: number; loopDelayMs: number };
}

async function health(s: Server): Promise<Health> {
  return (await (await fetch(`${s.url}/healthz`)).json()) as Health;
}

function rssMiB(pid: number): number {
  try {
    const kb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
    return Math.round(kb / 1024);
  } catch {
    return NaN;
  }
}

/** CPU seconds (user + system) the process has used so far. */
function cpuSeconds(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ 100)
  } catch {
    return NaN;
  }
}

function storeCounts(dataDir: string): Record<string, number> {
  const db = new Database(join(dataDir, 'tandem.sqlite'), { readonly: true });
  const rows = db.prepare('SELECT state, COUNT(*) AS n FROM jobs GROUP BY state').all() as {
    state: string;
    n: number;
  }[];
  db.close();
  return Object.fromEntries(rows.map((r) => [r.state, r.n]));
}

interface Flood {
  accepted: number;
  acceptedMs: number[];
  refused: number;
  refusedWithRetryAfter: number;
  retryAfterSeconds: number[];
  other: number;
  errors: number;
  offered: number;
}

async function flood(s: Server, rate: number, seconds: number): Promise<Flood> {
  const f: Flood = {
    accepted: 0,
    acceptedMs: [],
    refused: 0,
    refusedWithRetryAfter: 0,
    retryAfterSeconds: [],
    other: 0,
    errors: 0,
    offered: 0,
  };
  let done!: (r: autocannon.Result) => void;
  let failed!: (e: unknown) => void;
  const result = new Promise<autocannon.Result>((res, rej) => ((done = res), (failed = rej)));
  const options: autocannon.Options = {
    url: s.url,
    connections: CONNECTIONS,
    duration: seconds,
    overallRate: rate,
    requests: [
      {
        method: 'POST',
        path: '/v1/jobs',
        headers: { authorization: `Bearer ${s.key}`, 'content-type': 'application/json' },
        body: BODY,
        onResponse: (status, _body, _ctx, headers) => {
          if (status !== 429) return;
          const ra = Number(headers?.['retry-after']);
          if (Number.isFinite(ra) && ra >= 1) {
            f.refusedWithRetryAfter++;
            if (f.retryAfterSeconds.length < 100_000) f.retryAfterSeconds.push(ra);
          }
        },
      },
    ],
  };
  const instance = autocannon(options, (err, r) => (err ? failed(err) : done(r)));
  instance.on('response', (_client: unknown, status: number, _bytes: number, ms: number) => {
    f.offered++;
    if (status === 202) {
      f.accepted++;
      f.acceptedMs.push(ms);
    } else if (status === 429) f.refused++;
    else f.other++;
  });
  const r = await result;
  f.errors = r.errors + r.timeouts;
  return f;
}

/** Jobs/s the dispatcher drains from a backlog while nothing is submitted (shedding off). */
async function sustainableRate(opts: RunOptions): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'tandem-overload-'));
  const s = await startServer(dir, serverEnv('off', { ...opts, diag: false }, ''), opts);
  try {
    await autocannon({
      url: `${s.url}/v1/jobs`,
      method: 'POST',
      headers: { authorization: `Bearer ${s.key}`, 'content-type': 'application/json' },
      body: BODY,
      connections: 32,
      amount: 6000,
    });
    const q0 = (await health(s)).queued;
    const t0 = performance.now();
    await sleep(3000);
    const q1 = (await health(s)).queued;
    return (q0 - q1) / ((performance.now() - t0) / 1000);
  } finally {
    await stop(s);
    rmSync(dir, { recursive: true, force: true });
  }
}

async function run(
  mode: 'off' | 'on',
  multiple: number,
  sustainable: number,
  seconds: number,
  drainSeconds: number,
  opts: RunOptions,
): Promise<Record<string, unknown>> {
  const dir = mkdtempSync(join(tmpdir(), 'tandem-overload-'));
  const diagFile = join(dir, 'diag.json');
  const s = await startServer(dir, serverEnv(mode, opts, diagFile), opts);
  try {
    await flood(s, Math.round(sustainable / 2), 3); // warm-up: JIT, and a measured drain rate
    for (let h = await health(s); h.queued + h.running > 0; h = await health(s)) await sleep(100);
    const before = storeCounts(dir);
    let rssMax = 0;
    let probing = true;
    const separate = opts.probe !== 'inline' ? await probeInProcess(s.url) : null;
    if (opts.diag) process.kill(s.pid, 'SIGUSR2'); // opens the server's measurement window
    const inline = opts.probe !== 'process' ? probeInline(s.url) : null;
    const rss = (async () => {
      while (probing) {
        rssMax = Math.max(rssMax, rssMiB(s.pid));
        await sleep(250);
      }
    })();
    const rate = Math.round(sustainable * multiple);
    const cpu0 = cpuSeconds(s.pid);
    const f = await flood(s, rate, seconds);
    const serverCpuPercent = Math.round(((cpuSeconds(s.pid) - cpu0) / seconds) * 100);
    probing = false;
    if (opts.diag) process.kill(s.pid, 'SIGUSR2'); // closes it: the server writes diag.json
    const [separateResult, inlineResult] = await Promise.all([separate?.stop(), inline?.stop(), rss]);
    const end = await health(s);
    // Submissions stopped: everything accepted must now run to success.
    const t0 = performance.now();
    let left = end.queued + end.running;
    while (left > 0 && performance.now() - t0 < drainSeconds * 1000) {
      await sleep(250);
      const h = await health(s);
      left = h.queued + h.running;
    }
    const after = storeCounts(dir);
    const stored =
      Object.values(after).reduce((a, n) => a + n, 0) - Object.values(before).reduce((a, n) => a + n, 0);
    const succeeded = (after['succeeded'] ?? 0) - (before['succeeded'] ?? 0);
    const acc = f.acceptedMs.sort((a, b) => a - b);
    const hp = [...(separateResult?.latenciesMs ?? inlineResult ?? [])].sort((a, b) => a - b);
    let diag: unknown = 'off';
    if (opts.diag)
      for (let i = 0; i < 50 && diag === 'off'; i++)
        try {
          diag = JSON.parse(readFileSync(diagFile, 'utf8')) as unknown;
        } catch {
          await sleep(100);
        }
    const ra = f.retryAfterSeconds.sort((a, b) => a - b);
    return {
      mode: mode === 'on' ? 'shedding' : 'no shedding (main)',
      multiple,
      offeredPerSec: rate,
      answeredPerSec: Math.round(f.offered / seconds),
      accepted: f.accepted,
      acceptedPerSec: Math.round(f.accepted / seconds),
      acceptedP50ms: quantile(acc, 0.5),
      acceptedP99ms: quantile(acc, 0.99),
      refused429: f.refused,
      refusedWithRetryAfter: f.refusedWithRetryAfter,
      retryAfterP50s: quantile(ra, 0.5) ?? NaN,
      retryAfterMaxs: ra.at(-1) ?? NaN,
      otherStatus: f.other,
      clientErrors: f.errors,
      healthProbes: hp.length,
      healthP50ms: Math.round(quantile(hp, 0.5) * 10) / 10,
      healthP99ms: Math.round(quantile(hp, 0.99) * 10) / 10,
      healthMaxms: Math.round((hp.at(-1) ?? NaN) * 10) / 10,
      healthProbe: opts.probe === 'inline' ? 'inline (load generator process)' : 'separate process',
      ...(separateResult
        ? {
            probeOwnLoopDelayP99ms: Math.round(separateResult.ownLoopDelayP99Ms * 10) / 10,
            probeOwnLoopDelayMaxms: Math.round(separateResult.ownLoopDelayMaxMs * 10) / 10,
          }
        : {}),
      ...(opts.probe === 'both' ? { healthInline: latencySummary(inlineResult ?? []) } : {}),
      rssMaxMiB: rssMax,
      serverCpuPercent,
      backlogAtEnd: end.queued,
      serverDrainPerSec: end.load?.drainPerSecond ?? 'n/a',
      backlogBudget: end.load?.backlogBudget ?? 'n/a',
      drainSeconds: Math.round((performance.now() - t0) / 100) / 10,
      stored,
      succeeded,
      // Stored can exceed the 202s counted: requests in flight when the client stopped were committed too.
      everyAcceptedSucceeded: stored >= f.accepted && succeeded === stored,
      ...(opts.diag ? { server: diag } : {}),
    };
  } finally {
    await stop(s);
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Linux PSI: share of the last 10 s in which some runnable task waited for a CPU (other load on the box). */
function cpuPressure(): number | string {
  try {
    return Number(/avg10=([\d.]+)/.exec(readFileSync('/proc/pressure/cpu', 'utf8'))?.[1]);
  } catch {
    return 'n/a';
  }
}

/** The 1-minute load average (other work on the box). */
function loadAvg(): number {
  try {
    return Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0]);
  } catch {
    return NaN;
  }
}

export async function main(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      seconds: { type: 'string' },
      multiples: { type: 'string' },
      modes: { type: 'string' },
      drain: { type: 'string' },
      rate: { type: 'string' },
      probe: { type: 'string' },
      diag: { type: 'boolean' },
      'node-options': { type: 'string' },
      profile: { type: 'string' },
      'server-cpus': { type: 'string' },
      supervise: { type: 'boolean' },
    },
  });
  const probe = (values.probe ?? 'process') as ProbeMode;
  if (!['process', 'inline', 'both'].includes(probe))
    throw new Error(`--probe ${probe}: process, inline or both`);
  const opts: RunOptions = {
    probe,
    diag: values.diag === true,
    nodeOptions: values['node-options'] ?? '',
    profileDir: values.profile ?? null,
    serverCpus: values['server-cpus'] ?? null,
    supervise: values.supervise === true,
  };
  const seconds = Number(values.seconds ?? 20);
  const drain = Number(values.drain ?? 60);
  const multiples = (values.multiples ?? '2,5').split(',').map(Number);
  const modes = (values.modes ?? 'off,on').split(',') as ('off' | 'on')[];
  const sustainable = values.rate ? Number(values.rate) : Math.round(await sustainableRate(opts));
  process.stdout.write(
    `${JSON.stringify({
      sustainableJobsPerSec: sustainable,
      cpuPressureAvg10: cpuPressure(),
      loadAvg: loadAvg(),
      ...opts,
    })}\n`,
  );
  for (const m of multiples)
    for (const mode of modes) {
      const load = { loadAvgBefore: loadAvg(), cpuPressureBefore: cpuPressure() };
      const r = await run(mode, m, sustainable, seconds, drain, opts);
      process.stdout.write(`${JSON.stringify({ ...r, ...load, cpuPressureAvg10: cpuPressure() })}\n`);
    }
  return 0;
}

if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href)
  main(process.argv.slice(2)).then(
    (code) => (process.exitCode = code),
    (e: unknown) => {
      console.error(e);
      process.exitCode = 1;
    },
  );
