/**
 * The autoscaling signal as Prometheus gauges (computed at scrape time). `tandem_autoscale_desired_agents`
 * is what HPA (External metric through prometheus-adapter) or KEDA (prometheus scaler) scale an agent
 * Deployment on; because it is exported by the control plane, not by the agents, it is there at zero
 * replicas, which is what lets a GPU pool scale from zero and back.
 */
import { Gauge, type Registry } from 'prom-client';
import type { ClassSignal } from './signal.js';

export function registerAutoscaleMetrics(
  registry: Registry,
  latest: () => Promise<readonly ClassSignal[]>,
): void {
  const registers = [registry];
  const gauge = (name: string, help: string, pick: (s: ClassSignal) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['device_class'],
      registers,
      async collect() {
        this.reset();
        for (const s of await latest()) this.set({ device_class: s.deviceClass }, pick(s));
      },
    });
  gauge(
    'tandem_autoscale_desired_agents',
    'Agents each device class should run now (queue depth and device activity)',
    (s) => s.desired,
  );
  gauge('tandem_autoscale_queued_jobs', 'Jobs waiting in the queue per device class', (s) => s.queued);
  gauge('tandem_autoscale_running_jobs', 'Jobs running per device class', (s) => s.running);
  gauge('tandem_autoscale_agents', 'Live agents (heartbeat) per device class', (s) => s.agents);
  gauge(
    'tandem_autoscale_activity',
    'Sum of agent device activity (busy fraction) per device class',
    (s) => s.activity,
  );
}
