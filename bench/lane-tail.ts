/**
 * Where a lane request's client latency goes, request by request (issue 16: the 10^6-path price's p99
 * through the API is over 1 ms while the server's own spans are well under it). Three clocks lined up on
 * CLOCK_MONOTONIC (process.hrtime, which V8's CPU profiles also use on Linux):
 *   - the client's [sent, answered] per request (runLoad with `raw`),
 *   - the server's [request event, response finish] per request (`watchServer` on its http.Server),
 *   - with --cpu-prof, each thread's samples.
 * Per request: client → server (the request's bytes reaching the server's 'request' event), server
 * (parse, auth, batch, compute, reply), server → client (the answer reaching the client's 'end').
 * `summarizeTail` prints the slowest 1 % against the middle of the distribution; run as a script it
 * also reads the CPU profiles and says what each thread was doing during the slowest requests:
 *   node dist/bench/lane-tail.js --trace trace.json --profiles dir
 */
import { readdirSync, readFileSync } from 'node:fs';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { monotonicUs } from '../src/service/client/load.js';

/** Flat [requestUs, finishUs, ...] of the server's requests while watched. */
export function watchServer(server: Server): { stop(): Float64Array } {
  const spans: number[] = [];
  const onRequest = (_req: IncomingMessage, res: ServerResponse): void => {
    const t = monotonicUs();
    // When the handler hands the answer to the socket ('finish' comes a loop turn later, sometimes after
    // the client already has it).
    const end = res.end.bind(res) as (...a: unknown[]) => ServerResponse;
    res.end = ((...a: unknown[]) => {
      spans.push(t, monotonicUs());
      return end(...a);
    }) as ServerResponse['end'];
  };
  // First among the listeners, so Fastify's own handler's time counts as the server's.
  server.prependListener('request', onRequest);
  return {
    stop() {
      server.removeListener('request', onRequest);
      return Float64Array.from(spans);
    },
  };
}

export interface TraceRow {
  sent: number;
  answered: number;
  /** -1 where no server span fell inside the client's window. */
  serverIn: number;
  serverOut: number;
}

/** Pairs each client window with the server span that started inside it (both sorted by start). */
export function pairTrace(windowsUs: ArrayLike<number>, serverUs: ArrayLike<number>): TraceRow[] {
  const rows: TraceRow[] = [];
  let j = 0;
  for (let i = 0; i + 1 < windowsUs.length; i += 2) {
    const sent = windowsUs[i]!;
    const answered = windowsUs[i + 1]!;
    while (j + 1 < serverUs.length && serverUs[j]! < sent) j += 2;
    const inside = j + 1 < serverUs.length && serverUs[j]! <= answered;
    rows.push({
      sent,
      answered,
      serverIn: inside ? serverUs[j]! : -1,
      serverOut: inside ? serverUs[j + 1]! : -1,
    });
  }
  return rows;
}

const ms = (us: number): string => (us / 1000).toFixed(3);

/** The three legs (means, ms) of the slowest 1 % (at least 5), the 45–55 % band, and all. */
export function summarizeTail(rows: readonly TraceRow[]): string[] {
  const ok = rows.filter((r) => r.serverIn >= 0);
  const byLatency = [...ok].sort((a, b) => b.answered - b.sent - (a.answered - a.sent));
  const n = byLatency.length;
  const legs = (set: readonly TraceRow[]): string => {
    const mean = (f: (r: TraceRow) => number): number =>
      set.reduce((s, r) => s + f(r), 0) / Math.max(1, set.length);
    return (
      `total ${ms(mean((r) => r.answered - r.sent))}: client→server ${ms(mean((r) => r.serverIn - r.sent))}, ` +
      `server ${ms(mean((r) => r.serverOut - r.serverIn))}, server→client ${ms(mean((r) => r.answered - r.serverOut))} ms`
    );
  };
  const slow = byLatency.slice(0, Math.max(5, Math.ceil(n / 100)));
  const mid = byLatency.slice(Math.floor(n * 0.45), Math.ceil(n * 0.55));
  const lines = [
    `requests paired ${n} of ${rows.length}`,
    `slowest ${slow.length}: ${legs(slow)}`,
    `middle ${mid.length}: ${legs(mid)}`,
    `all: ${legs(ok)}`,
  ];
  // The slowest few one by one: which leg holds the time.
  for (const r of slow.slice(0, 10))
    lines.push(
      `  ${ms(r.answered - r.sent)} ms = ${ms(r.serverIn - r.sent)} + ${ms(r.serverOut - r.serverIn)} + ${ms(r.answered - r.serverOut)}`,
    );
  return lines;
}

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

/**
 * What a thread was doing inside the given windows: its samples' top frames (self time), counted.
 * V8 names its own states "(idle)" (the thread asleep in epoll), "(garbage collector)" and "(program)".
 */
export function framesIn(
  profile: CpuProfile,
  windows: readonly (readonly [number, number])[],
): Map<string, number> {
  const name = new Map<number, string>();
  for (const node of profile.nodes) {
    const f = node.callFrame;
    const file = f.url.split('/').slice(-2).join('/');
    name.set(
      node.id,
      f.url ? `${f.functionName || '(anonymous)'} ${file}:${f.lineNumber + 1}` : f.functionName,
    );
  }
  const counts = new Map<string, number>();
  const sorted = [...windows].sort((a, b) => a[0] - b[0]);
  let t = profile.startTime;
  let w = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i] ?? 0;
    while (w < sorted.length && sorted[w]![1] < t) w++;
    if (w >= sorted.length) break;
    if (t < sorted[w]![0]) continue;
    const k = name.get(profile.samples[i]!) ?? '?';
    counts.set(k, (counts.get(k) ?? 0) + 1);
  }
  return counts;
}

function top(counts: Map<string, number>, n: number): string {
  const total = [...counts.values()].reduce((a, b) => a + b, 0);
  return [...counts]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([k, c]) => `${((100 * c) / Math.max(1, total)).toFixed(0)}% ${k}`)
    .join('; ');
}

if (process.argv[1]?.endsWith('lane-tail.js')) {
  const { values } = parseArgs({
    options: { trace: { type: 'string' }, profiles: { type: 'string' }, top: { type: 'string' } },
  });
  if (!values.trace) throw new Error('--trace trace.json [--profiles dir]');
  const trace = JSON.parse(readFileSync(values.trace, 'utf8')) as {
    windowsUs: number[];
    serverUs: number[];
  };
  const rows = pairTrace(trace.windowsUs, trace.serverUs);
  for (const l of summarizeTail(rows)) console.log(l);
  if (values.profiles) {
    const ok = rows.filter((r) => r.serverIn >= 0);
    ok.sort((a, b) => b.answered - b.sent - (a.answered - a.sent));
    const slow = ok.slice(0, Math.max(5, Math.ceil(ok.length / 100)));
    const mid = ok.slice(Math.floor(ok.length * 0.45), Math.ceil(ok.length * 0.55));
    const win = (set: TraceRow[], a: keyof TraceRow, b: keyof TraceRow): [number, number][] =>
      set.map((r) => [r[a], r[b]]);
    const n = Number(values.top ?? 8);
    for (const f of readdirSync(values.profiles).filter((x) => x.endsWith('.cpuprofile'))) {
      const p = JSON.parse(readFileSync(join(values.profiles, f), 'utf8')) as CpuProfile;
      console.log(`${f} (${p.samples.length} samples)`);
      for (const [label, set] of [
        ['slowest', slow],
        ['middle', mid],
      ] as const) {
        console.log(`  ${label}, client→server: ${top(framesIn(p, win(set, 'sent', 'serverIn')), n)}`);
        console.log(`  ${label}, server: ${top(framesIn(p, win(set, 'serverIn', 'serverOut')), n)}`);
        console.log(`  ${label}, server→client: ${top(framesIn(p, win(set, 'serverOut', 'answered')), n)}`);
      }
    }
  }
}
