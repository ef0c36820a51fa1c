/**
 * What the service does when the runtime loses a device for the rest of the process (a sticky CUDA
 * fault: after an illegal address the driver refuses every new context until the process is relaunched).
 *
 * Supervised (`tandem serve` under its supervisor, src/cli/supervisor.ts) the service drains: it stops
 * starting jobs at once, waits until the jobs whose tasks the fault failed (TANDEM_ERR_DEVICE_FAULT) have
 * committed that failure — re-queued, they would fault again and loop — and then asks its owner to close
 * and relaunch. Every other running job is left 'running' in the database by the close, so the relaunched
 * process re-queues it; queued and newly submitted jobs wait in the database. Unsupervised, nothing
 * drains: the runtime routes new tasks to the devices left and the loss shows in /healthz.
 */
import type { Observer, TaskEvent } from '../obs/observer.js';
import type { DeviceLoss } from '../runtime/runtime.js';

export interface Lifecycle {
  /** 'draining': a device was lost and the service is stopping to be relaunched. */
  readonly state: 'serving' | 'draining';
  readonly reason: string | null;
  /** Ids of the devices lost in this process. */
  readonly devicesLost: readonly string[];
}

/** The faulted jobs' commits normally follow the fault within milliseconds; never wait longer than this. */
const SETTLE_MAX_MS = 10_000;
/**
 * Never less than this either: a job that did not tag its tasks is not in the faulted set, and its
 * failure reaches the dispatcher through a few promise turns.
 */
const SETTLE_MIN_MS = 50;
const POLL_MS = 10;

export class DeviceLossHandler implements Observer {
  private state: Lifecycle['state'] = 'serving';
  private reason: string | null = null;
  private readonly lost: string[] = [];
  /** Jobs with a task failed by the fault, seen from the start of the drain. */
  private readonly faulted = new Set<string>();
  private readonly requested: Promise<string>;
  private request: (why: string) => void = () => undefined;

  constructor(
    private readonly opts: {
      /** Drain and ask for a restart (supervised), or only record the loss. */
      readonly restart: boolean;
      /** Whether a job is still running (its outcome not yet committed). */
      readonly isRunning: (jobId: string) => boolean;
      readonly log: (level: 'warn' | 'error', msg: string) => void;
    },
  ) {
    this.requested = new Promise((resolve) => (this.request = resolve));
  }

  lifecycle(): Lifecycle {
    return { state: this.state, reason: this.reason, devicesLost: [...this.lost] };
  }

  get anyLost(): boolean {
    return this.lost.length > 0;
  }

  isLost(deviceId: string): boolean {
    return this.lost.includes(deviceId);
  }

  /** While true, no job may start (the dispatcher's admission reads it). */
  get draining(): boolean {
    return this.state === 'draining';
  }

  /** Resolves with why once a drain has settled; never without a device loss under supervision. */
  get restartRequested(): Promise<string> {
    return this.requested;
  }

  /**
   * Called by the runtime inside the device's fault path, before the tasks in flight there fail: the
   * drain starts (and this observer is attached by the caller) before any of those failures is seen.
   */
  deviceLost(loss: DeviceLoss): void {
    this.lost.push(loss.device);
    if (!this.opts.restart) {
      this.opts.log(
        'error',
        `${loss.device} lost for this process (${loss.reason}); serving on the remaining devices — restart the service to use it again`,
      );
      return;
    }
    if (this.state === 'draining') return;
    this.state = 'draining';
    this.reason = `${loss.device} lost: ${loss.reason}`;
    this.opts.log(
      'error',
      `${loss.device} lost for this process (${loss.reason}); draining: no new jobs start, the faulted jobs fail, then the service restarts with a fresh device context (running jobs resume after it)`,
    );
    void this.settle().then((waitedMs) => {
      this.opts.log('warn', `drained in ${waitedMs} ms; asking the supervisor for a restart`);
      this.request(this.reason ?? 'device lost');
    });
  }

  onTaskEnd(e: TaskEvent): void {
    if (this.state !== 'draining' || e.ok || e.errorCode !== 'TANDEM_ERR_DEVICE_FAULT') return;
    const job = e.tags?.['job'];
    if (job) this.faulted.add(job);
  }

  /** Waits until no faulted job is running any more (its failure committed), within the bounds above. */
  private async settle(): Promise<number> {
    const t0 = Date.now();
    for (;;) {
      await new Promise((r) => setTimeout(r, POLL_MS));
      const waited = Date.now() - t0;
      if (waited < SETTLE_MIN_MS) continue;
      const open = [...this.faulted].filter((id) => this.opts.isRunning(id));
      if (open.length === 0) return waited;
      if (waited >= SETTLE_MAX_MS) {
        // Left 'running', they are re-queued after the restart; with no GPU fault left they may pass.
        this.opts.log('warn', `faulted jobs still running after ${waited} ms: ${open.join(', ')}`);
        return waited;
      }
    }
  }
}
