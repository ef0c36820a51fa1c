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
 * Usage: node dist/bench/overload.js [--seconds 20] [--multiples 2,5] [--modes off,on] [--drain 60]
 */
import autocannon from 'autocannon';
import Database from 'better-sqlite3';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { quantile } from './quantile.js';
import { serve, stop, type Server } from './service.js';

const BODY = JSON.stringify({ type: 'sleep', params: { ms: 0 } });
const SERVE_ARGS = ['--backends', 'none', '--max-running', '8', '--no-supervise'];
const CONNECTIONS = 64;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

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
async function sustainableRate(): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'tandem-overload-'));
  const s = await serve(dir, SERVE_ARGS, { TANDEM_SHED: '0' });
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
): Promise<Record<string, number | string | boolean>> {
  const dir = mkdtempSync(join(tmpdir(), 'tandem-overload-'));
  const s = await serve(dir, SERVE_ARGS, { TANDEM_SHED: mode === 'on' ? '1' : '0' });
  try {
    await flood(s, Math.round(sustainable / 2), 3); // warm-up: JIT, and a measured drain rate
    for (let h = await health(s); h.queued + h.running > 0; h = await health(s)) await sleep(100);
    const before = storeCounts(dir);
    const probes: number[] = [];
    let rssMax = 0;
    let probing = true;
    const probe = (async () => {
      while (probing) {
        const t = performance.now();
        await health(s);
        probes.push(performance.now() - t);
        await sleep(50);
      }
    })();
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
    await Promise.all([probe, rss]);
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
    const hp = probes.sort((a, b) => a - b);
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
  const { values } = parseArgs({
    args: argv,
    options: {
      seconds: { type: 'string' },
      multiples: { type: 'string' },
      modes: { type: 'string' },
      drain: { type: 'string' },
      rate: { type: 'string' },
    },
  });
  const seconds = Number(values.seconds ?? 20);
  const drain = Number(values.drain ?? 60);
  const multiples = (values.multiples ?? '2,5').split(',').map(Number);
  const modes = (values.modes ?? 'off,on').split(',') as ('off' | 'on')[];
  const sustainable = values.rate ? Number(values.rate) : Math.round(await sustainableRate());
  process.stdout.write(
    `${JSON.stringify({ sustainableJobsPerSec: sustainable, cpuPressureAvg10: cpuPressure() })}\n`,
  );
  for (const m of multiples)
    for (const mode of modes) {
      const r = await run(mode, m, sustainable, seconds, drain);
      process.stdout.write(`${JSON.stringify({ ...r, cpuPressureAvg10: cpuPressure() })}\n`);
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
