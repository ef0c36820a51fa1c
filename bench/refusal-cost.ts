/**
 * What one refused submission costs the server: a real `tandem serve` held in its refusing state (a
 * backlog budget of one job, one running slot, a long sleep running and one queued), then autocannon
 * as fast as it can for --seconds with 64 connections: every answer is a 429. Prints requests answered
 * per second and the server process's CPU per answered request (user + system, all its threads), with
 * /healthz probed every 50 ms from a process of its own. At 5x the sustainable rate nearly every
 * request is such a refusal, so this cost sets how busy the event loop is there (bench/overload.ts).
 * CPU per request is far less sensitive to other load on the box than latency is; still, alternate
 * builds run to run. Usage: node dist/bench/refusal-cost.js [--seconds 10] [--runs 3] [--profile <path>]
 */
import autocannon from 'autocannon';
import { fork } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { ProbeResult } from './health-probe.js';
import { quantile } from './quantile.js';
import { serve, stop } from './service.js';

const HERE = new URL('.', import.meta.url).pathname;

function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

async function once(seconds: number, profile: string | null): Promise<Record<string, number>> {
  const dir = mkdtempSync(join(tmpdir(), 'tandem-refusal-'));
  const s = await serve(dir, ['--backends', 'none', '--max-running', '1', '--no-supervise'], {
    TANDEM_SHED: '1',
    TANDEM_SHED_BACKLOG: '1:1',
    // --profile: bench/loop-diag.ts in the server writes a CPU profile of the measured seconds.
    ...(profile
      ? {
          NODE_OPTIONS: `--import=${join(HERE, 'loop-diag.js')}`,
          TANDEM_DIAG_OUT: `${profile}.json`,
          TANDEM_DIAG_PROFILE: profile,
        }
      : {}),
  });
  try {
    const post = (): Promise<Response> =>
      fetch(`${s.url}/v1/jobs`, {
        method: 'POST',
        headers: { authorization: `Bearer ${s.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ type: 'sleep', params: { ms: 600_000 } }),
      });
    // One running, one queued: the budget is full and this tenant holds all of it.
    for (let i = 0; i < 2; i++) await (await post()).arrayBuffer();
    const warm = await post();
    await warm.arrayBuffer();
    if (warm.status !== 429) throw new Error(`expected the third submission refused, got ${warm.status}`);
    await autocannon({
      url: `${s.url}/v1/jobs`,
      method: 'POST',
      headers: { authorization: `Bearer ${s.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'sleep', params: { ms: 0 } }),
      connections: 64,
      duration: 2,
    });
    const probe = fork(join(HERE, 'health-probe.js'), [s.url, '50'], { stdio: 'inherit' });
    let ready!: () => void;
    const started = new Promise<void>((r) => (ready = r));
    const probed = new Promise<ProbeResult>((resolve) =>
      probe.on('message', (m) => (m === 'ready' ? ready() : resolve(m as ProbeResult))),
    );
    await started;
    if (profile) process.kill(s.pid, 'SIGUSR2');
    const cpu0 = cpuSeconds(s.pid);
    const r = await autocannon({
      url: `${s.url}/v1/jobs`,
      method: 'POST',
      headers: { authorization: `Bearer ${s.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'sleep', params: { ms: 0 } }),
      connections: 64,
      duration: seconds,
    });
    const cpu = cpuSeconds(s.pid) - cpu0;
    if (profile) process.kill(s.pid, 'SIGUSR2');
    probe.send('stop');
    const h = (await probed).latenciesMs.sort((a, b) => a - b);
    const answered = r.requests.total;
    return {
      answeredPerSec: Math.round(answered / seconds),
      non429: r.non2xx - (r.statusCodeStats?.['429']?.count ?? 0) + r['2xx'],
      serverCpuPercent: Math.round((cpu / seconds) * 100),
      serverCpuUsPerRequest: Math.round((cpu / answered) * 1e6 * 10) / 10,
      healthP50ms: Math.round(quantile(h, 0.5) * 10) / 10,
      healthP99ms: Math.round(quantile(h, 0.99) * 10) / 10,
      loadAvg: Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0]),
    };
  } finally {
    if (profile) await new Promise((r) => setTimeout(r, 1000)); // the profile is written
    await stop(s);
    rmSync(dir, { recursive: true, force: true });
  }
}

const { values } = parseArgs({
  options: { seconds: { type: 'string' }, runs: { type: 'string' }, profile: { type: 'string' } },
});
for (let i = 0; i < Number(values.runs ?? 3); i++)
  process.stdout.write(
    `${JSON.stringify(await once(Number(values.seconds ?? 10), values.profile ? `${values.profile}.${i}.cpuprofile` : null))}\n`,
  );
