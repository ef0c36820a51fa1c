/**
 * Service benchmarks with autocannon against a real `tandem serve` process on loopback:
 *   submit   durable submissions per second (jobs queue behind long sleeps, full fsync durability)
 *   latency  p50/p99 submit latency at a fixed 1,000 submissions per second
 *   health   /healthz latency while gemm jobs compute back to back on the CPU device (after one small
 *            job and 2 s of the same load have warmed the service; --cold measures it fresh), with the service's own
 *            event-loop delay; then the same load without a job (the machine's floor at that moment)
 *   restart  10,000 queued jobs, kill -9, time until the restarted service answers; none lost
 * Usage: node dist/bench/service.js [submit|latency|health|restart|all] [--seconds 10]
 */
import autocannon from 'autocannon';
import Database from 'better-sqlite3';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';

const MAIN = join(process.cwd(), 'dist', 'src', 'cli', 'main.js');

export interface Server {
  child: ChildProcess;
  url: string;
  key: string;
  /** The server process (under the supervisor, not the child itself). */
  pid: number;
  startedMs: number;
}

export async function serve(
  dataDir: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<Server> {
  const t0 = performance.now();
  const child = spawn(
    process.execPath,
    [MAIN, 'serve', '--port', '0', '--data-dir', dataDir, '--json', ...args],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: {
        ...process.env,
        TANDEM_LOG: 'silent',
        TANDEM_RATE_LIMIT: '1000000',
        TANDEM_MAX_QUEUED: '10000000',
        // These figures are durable acceptance of a deep queue of long jobs, which shedding would refuse.
        TANDEM_SHED: '0',
        ...env,
      },
    },
  );
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', (c) => reject(new Error(`serve exited with ${c}`)));
  });
  const { url, pid } = JSON.parse(line) as { url: string; pid: number };
  const key = readFileSync(join(dataDir, 'admin-key.txt'), 'utf8').trim();
  return { child, url, key, pid, startedMs: performance.now() - t0 };
}

export async function stop(s: Server, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (s.child.exitCode !== null) return;
  const exited = new Promise((r) => s.child.once('exit', r));
  s.child.kill(signal);
  await exited;
}

const SUBMIT_BODY = JSON.stringify({ type: 'sleep', params: { ms: 600_000 } });

function submitLoad(s: Server, opts: Partial<autocannon.Options>): Promise<autocannon.Result> {
  return autocannon({
    url: `${s.url}/v1/jobs`,
    method: 'POST',
    headers: { authorization: `Bearer ${s.key}`, 'content-type': 'application/json' },
    body: SUBMIT_BODY,
    ...opts,
  });
}

function summary(name: string, r: autocannon.Result): Record<string, number | string> {
  return {
    name,
    requests: r.requests.total,
    rps: Math.round(r.requests.average),
    p50ms: r.latency.p50,
    p99ms: r.latency.p99,
    maxms: r.latency.max,
    non2xx: r.non2xx,
    errors: r.errors,
  };
}

function countJobs(dataDir: string): number {
  const db = new Database(join(dataDir, 'tandem.sqlite'), { readonly: true });
  const n = (db.prepare('SELECT COUNT(*) AS n FROM jobs').get() as { n: number }).n;
  db.close();
  return n;
}

async function benchSubmit(
  seconds: number,
  connections: number,
  durability: string,
): Promise<Record<string, number | string>> {
  const dir = mkdtempSync(join(tmpdir(), 'tandem-bench-'));
  const s = await serve(dir, ['--backends', 'none', '--max-running', '2'], { TANDEM_DURABILITY: durability });
  try {
    await submitLoad(s, { connections, duration: 2 }); // warm-up (JIT, page cache)
    const before = countJobs(dir);
    const r = await submitLoad(s, { connections, duration: seconds });
    const stored = countJobs(dir) - before;
    return { ...summary(`submit (${connections} connections, durability ${durability})`, r), stored };
  } finally {
    await stop(s);
    rmSync(dir, { recursive: true, force: true });
  }
}

type Buckets = { le: number; n: number }[];

/** Cumulative buckets of one of the service's histograms (`labels` as printed, or '' for none). */
async function histogram(s: Server, name: string, labels: string): Promise<Buckets> {
  const text = await (
    await fetch(`${s.url}/metrics`, { headers: { authorization: `Bearer ${s.key}` } })
  ).text();
  const want = `${name}_bucket{le="`;
  const out: Buckets = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith(want)) continue;
    const m = /^[^{]+\{le="([^"]+)"(,?[^}]*)\} (\d+)/.exec(line);
    if (m && m[2] === (labels ? `,${labels}` : '')) out.push({ le: Number(m[1]), n: Number(m[3]) });
  }
  return out;
}

/** Quantile q of the observations between two scrapes, as a bucket upper bound in ms. */
function bucketQuantile(before: Buckets, after: Buckets, q: number): number {
  const diff = after.map((b, i) => ({ le: b.le, n: b.n - (before[i]?.n ?? 0) }));
  const total = diff.at(-1)?.n ?? 0;
  return (diff.find((b) => b.n >= q * total)?.le ?? NaN) * 1000;
}

const POST_JOBS = ['tandem_http_request_duration_seconds', 'method="POST",route="/v1/jobs"'] as const;
const COMMIT = ['tandem_submit_commit_seconds', ''] as const;

/**
 * The service's own event-loop delay since the previous scrape (prom-client resets it on each scrape), ms.
 * prom-client samples with a 10 ms timer, so an idle loop reads about 10: the excess is the stall.
 */
async function serverLoopDelay(s: Server): Promise<{ p99: number; max: number }> {
  const text = await (
    await fetch(`${s.url}/metrics`, { headers: { authorization: `Bearer ${s.key}` } })
  ).text();
  const read = (name: string) =>
    Number(new RegExp(`^tandem_process_nodejs_eventloop_lag_${name}_seconds (\\S+)`, 'm').exec(text)?.[1]) *
    1000;
  return { p99: Math.round(read('p99') * 10) / 10, max: Math.round(read('max') * 10) / 10 };
}

async function benchLatency(seconds: number): Promise<Record<string, number | string>> {
  const dir = mkdtempSync(join(tmpdir(), 'tandem-bench-'));
  const s = await serve(dir, ['--backends', 'none', '--max-running', '2']);
  try {
    await submitLoad(s, { connections: 16, duration: 2, overallRate: 1000 });
    await serverLoopDelay(s); // resets the service's event-loop delay histogram after the warm-up
    const [http0, commit0] = [await histogram(s, ...POST_JOBS), await histogram(s, ...COMMIT)];
    const r = await submitLoad(s, { connections: 16, duration: seconds, overallRate: 1000 });
    const loop = await serverLoopDelay(s);
    const [http1, commit1] = [await histogram(s, ...POST_JOBS), await histogram(s, ...COMMIT)];
    return {
      ...summary('submit at 1,000/s', r),
      // Inside the service, measured window only (bucket upper bounds).
      serverP99msAtMost: bucketQuantile(http0, http1, 0.99),
      commits: (commit1.at(-1)?.n ?? 0) - (commit0.at(-1)?.n ?? 0),
      commitP50msAtMost: bucketQuantile(commit0, commit1, 0.5),
      commitP99msAtMost: bucketQuantile(commit0, commit1, 0.99),
      serverLoopDelayP99ms: loop.p99,
      serverLoopDelayMaxms: loop.max,
    };
  } finally {
    await stop(s);
    rmSync(dir, { recursive: true, force: true });
  }
}

async function benchHealth(
  seconds: number,
  n: number,
  cold: boolean,
): Promise<Record<string, number | string>> {
  const dir = mkdtempSync(join(tmpdir(), 'tandem-bench-'));
  const s = await serve(dir, ['--backends', 'cpu', '--no-calibrate'], { TANDEM_CPU_THREADS: '1' });
  try {
    const call = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
      const res = await fetch(`${s.url}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${s.key}`,
          ...(body ? { 'content-type': 'application/json' } : {}),
        },
        ...(body ? { body: JSON.stringify(body) } : {}),
      });
      return (await res.json()) as T;
    };
    for (
      let i = 0;
      i < 200 && (await call<{ runtime: string }>('GET', '/healthz')).runtime === 'opening';
      i++
    )
      await new Promise((r) => setTimeout(r, 100));
    const load = (): Promise<autocannon.Result> =>
      autocannon({ url: `${s.url}/healthz`, connections: 2, duration: seconds, overallRate: 200 });
    // A service that has been up a while: its routes and the gemm job's code paths have run once (JIT),
    // as they have on any server that is not seconds old. --cold skips this (the first figure ever taken).
    if (!cold) {
      await call('POST', '/v1/jobs?wait=60', { type: 'gemm', params: { n: 512, panels: 8 } });
      await autocannon({ url: `${s.url}/healthz`, connections: 2, duration: 2, overallRate: 200 });
    }
    await serverLoopDelay(s); // resets the service's event-loop delay histogram
    // Jobs back to back for the whole window, so every /healthz call is answered while one computes.
    let loading = true;
    const runs: { state: string; runSeconds: number | null }[] = [];
    const jobs = (async () => {
      while (loading) {
        runs.push(
          await call<{ state: string; runSeconds: number | null }>('POST', '/v1/jobs?wait=60', {
            type: 'gemm',
            params: { n, panels: 8 },
          }),
        );
      }
    })();
    const r = await load();
    const loop = await serverLoopDelay(s);
    loading = false;
    await jobs;
    const after = {
      state: runs.every((x) => x.state === 'succeeded') ? 'succeeded' : runs.map((x) => x.state).join(','),
      runSeconds: runs.reduce((a, x) => a + (x.runSeconds ?? 0), 0) / Math.max(1, runs.length),
    };
    // The same load once the jobs are done: this machine's floor at this moment (other processes, the
    // client itself), to read the figure against.
    const floor = await load();
    return {
      ...summary(`/healthz during gemm n=${n}`, r),
      job: after.state,
      jobs: runs.length,
      jobRunSeconds: after.runSeconds,
      warm: cold ? 'no' : 'yes',
      serverLoopDelayP99ms: loop.p99,
      serverLoopDelayMaxms: loop.max,
      noJobP99ms: floor.latency.p99,
      noJobMaxms: floor.latency.max,
    };
  } finally {
    await stop(s);
    rmSync(dir, { recursive: true, force: true });
  }
}

async function benchRestart(jobs: number): Promise<Record<string, number | string>> {
  const dir = mkdtempSync(join(tmpdir(), 'tandem-bench-'));
  let s = await serve(dir, ['--backends', 'none', '--max-running', '1']);
  try {
    await submitLoad(s, { connections: 16, amount: jobs });
    const stored = countJobs(dir);
    await stop(s, 'SIGKILL');
    const t0 = performance.now();
    s = await serve(dir, ['--backends', 'none', '--max-running', '1']);
    const listening = performance.now() - t0;
    const res = await fetch(`${s.url}/v1/jobs?limit=1`, { headers: { authorization: `Bearer ${s.key}` } });
    const firstAnswer = performance.now() - t0;
    const health = (await (await fetch(`${s.url}/healthz`)).json()) as { queued: number; running: number };
    return {
      name: `restart with ${jobs} queued`,
      stored,
      listeningMs: Math.round(listening),
      firstApiAnswerMs: Math.round(firstAnswer),
      status: res.status,
      queuedAfter: health.queued,
      runningAfter: health.running,
      lost: stored - (health.queued + health.running),
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

export async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      seconds: { type: 'string' },
      n: { type: 'string' },
      jobs: { type: 'string' },
      connections: { type: 'string' },
      durability: { type: 'string' },
      cold: { type: 'boolean' },
    },
    allowPositionals: true,
  });
  const which = positionals[0] ?? 'all';
  const seconds = Number(values.seconds ?? 10);
  const results: Record<string, number | string>[] = [];
  if (which === 'submit' || which === 'all')
    results.push(await benchSubmit(seconds, Number(values.connections ?? 64), values.durability ?? 'full'));
  if (which === 'latency' || which === 'all') results.push(await benchLatency(seconds));
  if (which === 'health' || which === 'all')
    results.push(await benchHealth(seconds, Number(values.n ?? 2048), values.cold === true));
  if (which === 'restart' || which === 'all') results.push(await benchRestart(Number(values.jobs ?? 10_000)));
  for (const r of results)
    process.stdout.write(`${JSON.stringify({ ...r, cpuPressureAvg10: cpuPressure() })}\n`);
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
