/**
 * Issue 19, finding 8, end to end on a real GPU: a supervised `tandem serve` runs a custom CUDA kernel
 * with an infinite loop and timeoutSeconds 3. The job cannot stop at a task boundary; after its deadline
 * and the grace (TANDEM_DEADLINE_GRACE_MS=2000) the service's watchdog fails it with
 * TANDEM_ERR_DEADLINE_EXCEEDED (hungDevices: cuda0), gives cuda0 up and asks its supervisor for a
 * relaunch; the process exit is what stops the kernel (the driver tears its context down). Jobs queued or
 * running meanwhile (a cuda gemm that lands behind the hung kernel, a sleep) run in the relaunched server
 * and succeed, and the GPU works again there.
 */
import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { tempDir } from '../service/helpers.js';
import { apiClient, startServe } from '../service/serve-process.js';
import { openCuda } from './cuda-harness.js';

const status = await openCuda();
const skip = status.available && status.devices.length > 0 ? false : (status.reason ?? 'no CUDA device');
if (skip) console.log(`# skip hung-kernel test: ${skip}`);

/** Spins on a volatile read of a one (never elided, never ends: nothing writes the tensor). */
const SPIN_SOURCE =
  'extern "C" __global__ void tdm_spin(float* p) { while (*(volatile float*)p > 0.0f) { } }';

interface Job {
  id: string;
  state: string;
  attempt: number;
  error: { code: string; message: string; details?: Record<string, unknown> } | null;
}

void describe('service: a CUDA kernel that never ends, under the supervisor', { skip }, () => {
  void it(
    'fails it with TANDEM_ERR_DEADLINE_EXCEEDED, relaunches, and the jobs queued meanwhile succeed',
    { timeout: 240_000 },
    async () => {
      const dir = tempDir('tandem-gpu-hung-');
      const serve = startServe(dir, ['--backends', 'cuda,cpu', '--no-calibrate'], {
        TANDEM_LOG: 'warn',
        TANDEM_DEADLINE_GRACE_MS: '2000',
      });
      try {
        const first = await serve.next(60_000);
        const key = readFileSync(join(dir, 'admin-key.txt'), 'utf8').trim();
        const call = apiClient(first.url, key, { retryConnectionErrors: 300 });
        const finished = async (id: string, timeoutMs = 150_000): Promise<Job> => {
          const deadline = Date.now() + timeoutMs;
          for (;;) {
            const job = await call<Job>('GET', `/v1/jobs/${id}`);
            if (['succeeded', 'failed', 'cancelled'].includes(job.state)) return job;
            if (Date.now() > deadline)
              throw new Error(`job ${id} still ${job.state}; stderr:\n${serve.stderr()}`);
            await new Promise((r) => setTimeout(r, 100));
          }
        };
        const warm = await finished(
          (await call<Job>('POST', '/v1/jobs', { type: 'gemm', params: { n: 256, device: 'cuda' } })).id,
        );
        assert.equal(warm.state, 'succeeded', JSON.stringify(warm.error));

        const t0 = Date.now();
        const hung = await call<Job>('POST', '/v1/jobs', {
          type: 'custom-kernel',
          timeoutSeconds: 3,
          params: {
            language: 'cuda',
            source: SPIN_SOURCE,
            entry: 'tdm_spin',
            tensors: [{ name: 'p', shape: [64], dtype: 'f32', mode: 'rw', init: 'ones' }],
            params: [{ tensor: 'p' }],
            grid: [1],
            block: [1],
          },
        });
        await new Promise((r) => setTimeout(r, 500));
        // Submitted while the kernel spins: one lands behind it on the GPU, one needs no device.
        const gemm = await call<Job>('POST', '/v1/jobs', {
          type: 'gemm',
          params: { n: 512, device: 'cuda' },
        });
        const sleep = await call<Job>('POST', '/v1/jobs', { type: 'sleep', params: { ms: 100 } });

        const failed = await finished(hung.id);
        assert.equal(failed.state, 'failed');
        assert.equal(failed.error?.code, 'TANDEM_ERR_DEADLINE_EXCEEDED', failed.error?.message);
        assert.deepEqual(failed.error?.details?.['hungDevices'], ['cuda0']);
        assert.ok(Number(failed.error?.details?.['deviceSeconds']) >= 4, JSON.stringify(failed.error));

        const relaunched = await serve.next(120_000);
        assert.equal(relaunched.url, first.url);
        assert.equal(relaunched.restarts, 1);
        assert.match(serve.stderr(), /cuda0 lost: a kernel of job .* did not end by its deadline \(hung\)/);
        // Ended at once by the supervisor (the server's own exit would wait on the driver), not after
        // RESTART_EXIT_GRACE_MS.
        assert.match(
          serve.stderr(),
          /relaunch with a GPU kernel hung \(its exit would wait on the device\); killing it/,
        );
        console.log(`# hung kernel failed and server relaunched ${Date.now() - t0} ms after submit`);

        for (const j of [gemm, sleep]) {
          const done = await finished(j.id);
          assert.equal(done.state, 'succeeded', `${j.id}: ${JSON.stringify(done.error)}\n${serve.stderr()}`);
        }
        const again = await call<Job>('GET', `/v1/jobs/${hung.id}`);
        assert.equal(again.attempt, 1, 'the hung job was not run again');
        const health = await call<{ status: string }>('GET', '/healthz');
        assert.equal(health.status, 'ok');
        serve.kill('SIGTERM');
        assert.equal(await serve.exited, 0);
      } finally {
        serve.kill();
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});
