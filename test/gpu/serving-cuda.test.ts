/**
 * The interactive lane on the GPU machine: the mlp and cnn served on CUDA answer what the same
 * weights answer on the CPU; their batches' tasks run on the GPU; batching raises throughput over
 * batching off (figures printed); batch-1 latency with delay 0 (printed); with preferIdle the batches
 * move to the CPU while a job uses the GPU and come back after. Skips without a CUDA device.
 */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import type { TaskEvent } from '../../src/obs/observer.js';
import { loadServiceConfig } from '../../src/service/config.js';
import { openRuntime } from '../../src/service/server.js';
import { tempDir, testService, type TestService } from '../service/helpers.js';
import { batchSize, infer, mustRegister, randomImage } from '../service/serving-helpers.js';

async function closedLoop(s: TestService, name: string, concurrency: number, total: number) {
  let sent = 0;
  const sizes: number[] = [];
  const lat: number[] = [];
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async (_, c) => {
      while (sent < total) {
        sent++;
        const a = performance.now();
        const r = await infer(s, name, { inputs: randomImage(c) });
        lat.push(performance.now() - a);
        assert.equal(r.statusCode, 200, r.body);
        sizes.push(batchSize(r));
      }
    }),
  );
  lat.sort((a, b) => a - b);
  const q = (p: number) => lat[Math.min(lat.length - 1, Math.floor(p * lat.length))]!;
  return {
    rps: total / ((performance.now() - t0) / 1000),
    meanBatch: sizes.reduce((a, b) => a + b, 0) / sizes.length,
    p50: q(0.5),
    p99: q(0.99),
  };
}

void test(
  'serving on CUDA: parity with the CPU, batching, latency, preferIdle',
  { timeout: 300_000 },
  async (t) => {
    const dir = tempDir();
    const cfg = loadServiceConfig(
      {},
      {
        dataDir: dir,
        runtime: {
          enabled: true,
          backends: ['cpu', 'cuda'],
          cpuThreads: 4,
          calibrate: false,
          cacheDir: join(dir, 'cache'),
        },
      },
    );
    const { rt, reason } = await openRuntime(cfg);
    if (!rt || !rt.devices.some((d) => d.info.kind === 'cuda')) {
      await rt?.close();
      rmSync(dir, { recursive: true, force: true });
      t.skip(`no cuda device: ${reason}`);
      return;
    }
    const ranOn = new Map<string, Set<string>>();
    const watch = {
      onTaskEnd(e: TaskEvent) {
        const m = e.tags?.['model'];
        if (m !== undefined) {
          if (!ranOn.has(m)) ranOn.set(m, new Set());
          ranOn.get(m)!.add(e.deviceId.replace(/\d+$/, ''));
        }
      },
    };
    rt.addObserver(watch);
    const s = await testService({}, rt, dir);
    try {
      for (const kind of ['mlp', 'cnn']) {
        await mustRegister(s, {
          name: `${kind}-gpu`,
          kind,
          config: { seed: 5 },
          placement: { kinds: ['cuda'] },
        });
        await mustRegister(s, {
          name: `${kind}-cpu`,
          kind,
          config: { seed: 5 },
          placement: { kinds: ['cpu'] },
        });
        for (let k = 0; k < 4; k++) {
          const x = randomImage(k + 10);
          const [g, c] = await Promise.all([
            infer(s, `${kind}-gpu`, { inputs: x }),
            infer(s, `${kind}-cpu`, { inputs: x }),
          ]);
          assert.equal(g.statusCode, 200, g.body);
          const pg = (g.json() as { outputs: { probabilities: number[] } }).outputs.probabilities;
          const pc = (c.json() as { outputs: { probabilities: number[] } }).outputs.probabilities;
          for (let i = 0; i < 10; i++)
            assert.ok(Math.abs(pg[i]! - pc[i]!) < 2e-3, `${kind} class ${i}: cuda ${pg[i]} cpu ${pc[i]}`);
        }
        assert.deepEqual([...(ranOn.get(`${kind}-gpu`) ?? [])], ['cuda']);
        assert.deepEqual([...(ranOn.get(`${kind}-cpu`) ?? [])], ['cpu']);
      }

      await mustRegister(s, {
        name: 'on',
        kind: 'mlp',
        placement: { kinds: ['cuda'] },
        batching: { maxBatchSize: 64, maxQueueDelayUs: 500 },
      });
      await mustRegister(s, {
        name: 'off',
        kind: 'mlp',
        placement: { kinds: ['cuda'] },
        batching: { maxBatchSize: 1, maxQueueDelayUs: 0 },
      });
      await mustRegister(s, {
        name: 'lat',
        kind: 'mlp',
        placement: { kinds: ['cuda'] },
        batching: { maxBatchSize: 64, maxQueueDelayUs: 0 },
      });
      for (const n of ['on', 'off', 'lat']) await closedLoop(s, n, 8, 200);
      for (const conc of [16, 64]) {
        const off = await closedLoop(s, 'off', conc, 4000);
        const on = await closedLoop(s, 'on', conc, 4000);
        console.log(
          `# mlp on cuda over inject, concurrency ${conc}: off ${off.rps.toFixed(0)} req/s p99 ${off.p99.toFixed(2)} ms; ` +
            `on ${on.rps.toFixed(0)} req/s p99 ${on.p99.toFixed(2)} ms, mean batch ${on.meanBatch.toFixed(1)} (${(on.rps / off.rps).toFixed(2)}×)`,
        );
        assert.ok(on.meanBatch > 1);
      }
      const one = await closedLoop(s, 'lat', 1, 2000);
      console.log(
        `# mlp on cuda, one client, delay 0: p50 ${one.p50.toFixed(3)} ms, p99 ${one.p99.toFixed(3)} ms (whole request in the service, inject)`,
      );

      // preferIdle: on the CPU while a job uses the GPU.
      await mustRegister(s, {
        name: 'idle',
        kind: 'mlp',
        placement: { kinds: ['cuda', 'cpu'], preferIdle: true },
      });
      ranOn.delete('idle');
      await infer(s, 'idle', { inputs: randomImage(1) });
      assert.deepEqual([...ranOn.get('idle')!], ['cuda'], 'the GPU is free: served there');
      const sub = await s.svc.app.inject({
        method: 'POST',
        url: '/v1/jobs',
        headers: s.auth(),
        // A long option pricing job keeps the GPU busy (as in the fair-share GPU test).
        payload: { type: 'option', params: { paths: 2 ** 40, device: 'cuda' } },
      });
      assert.equal(sub.statusCode, 202, sub.body);
      const id = (sub.json() as { id: string }).id;
      for (let i = 0; i < 600; i++) {
        const j = (await s.svc.app.inject({ url: `/v1/jobs/${id}`, headers: s.auth() })).json() as {
          state: string;
        };
        if (j.state === 'running') break;
        await new Promise((r) => setTimeout(r, 50));
      }
      await new Promise((r) => setTimeout(r, 500));
      ranOn.delete('idle');
      for (let i = 0; i < 5; i++) await infer(s, 'idle', { inputs: randomImage(i) });
      const during = [...(ranOn.get('idle') ?? [])];
      await s.svc.app.inject({ method: 'POST', url: `/v1/jobs/${id}/cancel`, headers: s.auth() });
      console.log(`# preferIdle: while the option job ran on the GPU, batches ran on ${during.join(', ')}`);
      assert.ok(during.includes('cpu'), `while the job ran: ${during.join(', ')}`);
    } finally {
      rt.removeObserver(watch);
      await s.close();
      await rt.close();
    }
  },
);
