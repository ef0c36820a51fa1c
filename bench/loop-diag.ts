/**
 * A diagnostic preload for a server under a benchmark: `NODE_OPTIONS="--import <dist>/bench/loop-diag.js"`
 * with TANDEM_DIAG_OUT=<file>. SIGUSR2 opens a measurement window, a second SIGUSR2 closes it and writes
 * one JSON object to the file: the main thread's event-loop delay histogram (perf_hooks, 1 ms
 * resolution), its utilization, every stall over STALL_MS seen by a 2 ms timer (with the GC pauses that
 * overlap it), every GC pause by kind, and `/healthz` as the server handled it (from its 'request' event
 * to the response's 'finish'). With TANDEM_DIAG_PROFILE=<file> it also writes a CPU profile of the window
 * (V8's sampler at 250 µs; --cpu-prof is not allowed in NODE_OPTIONS). Not part of the service:
 * bench/overload.ts loads it with --diag.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { Session } from 'node:inspector';
import { monitorEventLoopDelay, performance, PerformanceObserver } from 'node:perf_hooks';
import { isMainThread } from 'node:worker_threads';

const STALL_MS = 8;
const TICK_MS = 2;

interface Gc {
  start: number;
  ms: number;
  kind: number;
}

const GC_KIND: Record<number, string> = { 1: 'scavenge', 2: 'mark-compact', 4: 'incremental', 8: 'weak-cb' };

function quantile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]!;
}

const r = (x: number): number => Math.round(x * 100) / 100;

/**
 * The main thread's scheduler counters (Linux /proc/<pid>/task/<pid>/schedstat): ms on a CPU, ms
 * runnable but waiting for one, timeslices. A stall with little on-CPU time was the machine's (other
 * processes held the cores), not the server's work.
 */
function schedstat(): { cpuMs: number; waitMs: number; slices: number } {
  try {
    const [cpu, wait, slices] = readFileSync(`/proc/${process.pid}/task/${process.pid}/schedstat`, 'utf8')
      .trim()
      .split(' ')
      .map(Number);
    return { cpuMs: cpu! / 1e6, waitMs: wait! / 1e6, slices: slices! };
  } catch {
    return { cpuMs: NaN, waitMs: NaN, slices: NaN };
  }
}

function install(out: string): void {
  const eld = monitorEventLoopDelay({ resolution: 1 });
  let open = false;
  let windowStart = 0;
  /** The window in CLOCK_MONOTONIC µs, the clock of a --cpu-prof profile's timestamps. */
  let windowHrUs = [0, 0];
  let elu0 = performance.eventLoopUtilization();
  let cpu0 = process.cpuUsage();
  const gcs: Gc[] = [];
  const stalls: { at: number; ms: number; cpuMs: number; waitMs: number }[] = [];
  let sched0 = schedstat();
  const health: number[] = [];

  new PerformanceObserver((list) => {
    if (!open) return;
    for (const e of list.getEntries()) {
      const kind = (e as unknown as { detail?: { kind?: number } }).detail?.kind ?? 0;
      gcs.push({ start: e.startTime, ms: e.duration, kind });
    }
  }).observe({ entryTypes: ['gc'] });

  let last = performance.now();
  let lastSched = schedstat();
  setInterval(() => {
    const t = performance.now();
    const late = t - last - TICK_MS;
    if (!open) {
      last = t;
      return;
    }
    const sched = schedstat();
    if (late > STALL_MS)
      stalls.push({
        at: last,
        ms: late,
        cpuMs: sched.cpuMs - lastSched.cpuMs,
        waitMs: sched.waitMs - lastSched.waitMs,
      });
    last = t;
    lastSched = sched;
  }, TICK_MS).unref();

  const emit = http.Server.prototype.emit as (
    this: http.Server,
    event: string | symbol,
    ...args: unknown[]
  ) => boolean;
  http.Server.prototype.emit = function (this: http.Server, event: string | symbol, ...args: unknown[]) {
    if (open && event === 'request') {
      const [req, res] = args as [http.IncomingMessage, http.ServerResponse];
      if (req.url === '/healthz') {
        const t = performance.now();
        res.once('finish', () => health.push(performance.now() - t));
      }
    }
    return emit.call(this, event, ...args);
  } as typeof http.Server.prototype.emit;

  const report = (): object => {
    const seconds = (performance.now() - windowStart) / 1000;
    const elu = performance.eventLoopUtilization(elu0);
    const cpu = process.cpuUsage(cpu0);
    const byKind: Record<string, { n: number; totalMs: number; maxMs: number; over5: number }> = {};
    for (const g of gcs) {
      const k = (byKind[GC_KIND[g.kind] ?? String(g.kind)] ??= { n: 0, totalMs: 0, maxMs: 0, over5: 0 });
      k.n++;
      k.totalMs = r(k.totalMs + g.ms);
      k.maxMs = r(Math.max(k.maxMs, g.ms));
      if (g.ms > 5) k.over5++;
    }
    // A stall [at, at + ms] that some GC pause overlaps, and how much of it was GC.
    const stallList = stalls.map((s) => {
      const gcMs = gcs
        .filter((g) => g.start < s.at + s.ms + TICK_MS && g.start + g.ms > s.at)
        .reduce((a, g) => a + g.ms, 0);
      return { ms: r(s.ms), gcMs: r(gcMs), cpuMs: r(s.cpuMs), waitMs: r(s.waitMs) };
    });
    const sched = schedstat();
    const sum = (f: (s: (typeof stallList)[number]) => number): number =>
      r(stallList.reduce((a, s) => a + f(s), 0));
    const stallSorted = stallList.map((s) => s.ms).sort((a, b) => a - b);
    const h = [...health].sort((a, b) => a - b);
    const pct = (p: number): number => r(eld.percentile(p) / 1e6);
    return {
      seconds: r(seconds),
      windowHrtimeUs: windowHrUs,
      loopUtilization: r(elu.utilization),
      processCpuPercent: Math.round(((cpu.user + cpu.system) / 1e6 / seconds) * 100),
      mainThread: {
        onCpuMs: r(sched.cpuMs - sched0.cpuMs),
        runqueueWaitMs: r(sched.waitMs - sched0.waitMs),
        timeslices: sched.slices - sched0.slices,
      },
      loopDelayMs: { p50: pct(50), p90: pct(90), p99: pct(99), p999: pct(99.9), max: r(eld.max / 1e6) },
      stalls: {
        over8ms: stallList.length,
        over15ms: stallList.filter((s) => s.ms > 15).length,
        withGc: stallList.filter((s) => s.gcMs > 0).length,
        gcShareOfStallMs: r(
          stallList.reduce((a, s) => a + Math.min(s.gcMs, s.ms), 0) /
            Math.max(
              1e-9,
              stallList.reduce((a, s) => a + s.ms, 0),
            ),
        ),
        totalMs: sum((s) => s.ms),
        onCpuMs: sum((s) => s.cpuMs),
        runqueueWaitMs: sum((s) => s.waitMs),
        p50: r(quantile(stallSorted, 0.5)),
        max: r(stallSorted.at(-1) ?? 0),
        longest: [...stallList].sort((a, b) => b.ms - a.ms).slice(0, 12),
      },
      gc: byKind,
      healthServerMs: {
        n: h.length,
        p50: r(quantile(h, 0.5)),
        p99: r(quantile(h, 0.99)),
        max: r(h.at(-1) ?? NaN),
      },
    };
  };

  const profileFile = process.env['TANDEM_DIAG_PROFILE'];
  const session = profileFile ? new Session() : null;
  const post = (method: string, params?: object): Promise<unknown> =>
    new Promise((resolve, reject) =>
      session!.post(method, params ?? {}, (err, res) => (err ? reject(err) : resolve(res))),
    );
  if (session) {
    session.connect();
    void post('Profiler.enable').then(() => post('Profiler.setSamplingInterval', { interval: 250 }));
  }

  process.on('SIGUSR2', () => {
    if (!open) {
      if (session) void post('Profiler.start');
      open = true;
      windowStart = performance.now();
      windowHrUs = [Number(process.hrtime.bigint() / 1000n), 0];
      elu0 = performance.eventLoopUtilization();
      cpu0 = process.cpuUsage();
      sched0 = lastSched = schedstat();
      last = performance.now();
      eld.reset();
      eld.enable();
      gcs.length = stalls.length = health.length = 0;
      return;
    }
    open = false;
    windowHrUs[1] = Number(process.hrtime.bigint() / 1000n);
    eld.disable();
    const summary = report();
    if (!session) {
      writeFileSync(out, `${JSON.stringify(summary)}\n`);
      return;
    }
    post('Profiler.stop').then(
      (res) => {
        writeFileSync(profileFile!, JSON.stringify((res as { profile: unknown }).profile));
        writeFileSync(out, `${JSON.stringify(summary)}\n`);
      },
      (e: unknown) => writeFileSync(out, `${JSON.stringify({ ...summary, profileError: String(e) })}\n`),
    );
  });
}

const out = process.env['TANDEM_DIAG_OUT'];
if (isMainThread && out) install(out);
