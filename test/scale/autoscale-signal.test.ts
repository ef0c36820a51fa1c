/** The scaling signal: up at once with queue depth or activity, down only after the idle window, to zero. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Registry } from 'prom-client';
import type { AgentInfo } from '../../src/service/queue/heartbeat.js';
import { registerAutoscaleMetrics } from '../../src/service/autoscale/metrics.js';
import { ScaleSignal } from '../../src/service/autoscale/signal.js';
import { emptyCounts } from '../../src/service/queue/queue.js';

const policy = { min: 0, max: 4, jobsPerAgent: 8, targetActivity: 0.5, idleMs: 1000 };
const agent = (name: string, util: number, running = 0): AgentInfo => ({
  name,
  host: 'h',
  pid: 1,
  deviceClasses: ['gpu'],
  devices: [
    { id: 'cuda0', kind: 'cuda', deviceClass: 'gpu', memoryBytes: 8e9, freeBytes: 8e9, utilization: util },
  ],
  running,
  capacity: 4,
  jobsDone: 0,
  reruns: 0,
  maxJobBytes: { gpu: 8e9 },
  at: 0,
});

describe('autoscaling signal', () => {
  it('scales up with queue depth at once, capped at max', () => {
    const s = new ScaleSignal(policy);
    const [g] = s.compute({ gpu: { ...emptyCounts(), waiting: 20 } }, [], 0);
    assert.equal(g?.desired, 3);
    const [h] = s.compute({ gpu: { ...emptyCounts(), waiting: 500 } }, [], 10);
    assert.equal(h?.desired, 4);
  });

  it('keeps agents whose devices are busy even with an empty queue', () => {
    const s = new ScaleSignal(policy);
    const [g] = s.compute({ gpu: emptyCounts() }, [agent('a', 0.9), agent('b', 0.8)], 0);
    assert.ok(Math.abs((g?.activity ?? 0) - 1.7) < 1e-9);
    assert.equal(g?.desired, 4); // 1.7 / 0.5 target
  });

  it('scales down only after the idle window, and to zero when idle', () => {
    const s = new ScaleSignal(policy);
    s.compute({ gpu: { ...emptyCounts(), waiting: 30 } }, [], 0);
    const [held] = s.compute({ gpu: emptyCounts() }, [agent('a', 0)], 500);
    assert.equal(held?.desired, 4);
    assert.equal(held?.wanted, 0);
    const [later] = s.compute({ gpu: emptyCounts() }, [agent('a', 0)], 1600);
    assert.equal(later?.desired, 0);
  });

  it('is exported as tandem_autoscale_desired_agents per device class', async () => {
    const reg = new Registry();
    const s = new ScaleSignal(policy);
    registerAutoscaleMetrics(reg, () =>
      Promise.resolve(s.compute({ gpu: { ...emptyCounts(), waiting: 9 } }, [])),
    );
    const text = await reg.metrics();
    assert.match(text, /tandem_autoscale_desired_agents\{device_class="gpu"\} 2/);
    assert.match(text, /tandem_autoscale_queued_jobs\{device_class="gpu"\} 9/);
  });
});
