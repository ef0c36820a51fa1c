/**
 * `/healthz` probed from a process of its own (forked by bench/overload.ts): in the load generator's
 * process the probe's timings included that process's own event-loop delay (autocannon at thousands of
 * requests a second keeps its loop busy), which is the client's latency, not the server's. Probes every
 * --every ms until the parent sends 'stop', then sends back the latencies (ms) and its own loop delay.
 * Says 'ready' after one unmeasured probe, so the parent can start its load once the probe is running.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';

export interface ProbeResult {
  latenciesMs: number[];
  /** This process's own event-loop delay p99 and max, ms: how much of a latency could be the probe's. */
  ownLoopDelayP99Ms: number;
  ownLoopDelayMaxMs: number;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function probe(url: string, everyMs: number): Promise<void> {
  const eld = monitorEventLoopDelay({ resolution: 1 });
  eld.enable();
  let running = true;
  process.on('message', (m) => {
    if (m === 'stop') running = false;
  });
  const latenciesMs: number[] = [];
  // One probe before measuring (connection set up, code warm), then the parent starts its load.
  await (await fetch(`${url}/healthz`)).arrayBuffer();
  process.send!('ready');
  while (running) {
    const t = performance.now();
    const res = await fetch(`${url}/healthz`);
    await res.arrayBuffer();
    latenciesMs.push(performance.now() - t);
    await sleep(everyMs);
  }
  eld.disable();
  const result: ProbeResult = {
    latenciesMs,
    ownLoopDelayP99Ms: eld.percentile(99) / 1e6,
    ownLoopDelayMaxMs: eld.max / 1e6,
  };
  process.send!(result, () => process.disconnect());
}

const [url, every] = process.argv.slice(2);
if (url && process.send)
  probe(url, Number(every ?? 50)).catch((e: unknown) => {
    console.error(e);
    process.exitCode = 1;
    process.disconnect();
  });
