/**
 * The local autoscaler: starts and stops `tandem agent` processes on this machine from the scaling
 * signal of one device class. New agents come up when the signal rises; when it falls (after the
 * stabilization window) the newest agents get SIGTERM, finish what they run and leave. Every change is
 * reported through `onEvent` with a timestamp (the step-response benchmark reads them).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type { AgentRegistry } from '../queue/heartbeat.js';
import type { JobQueue } from '../queue/queue.js';
import type { ScaleSignal } from './signal.js';

export interface LocalAutoscalerOptions {
  readonly queue: JobQueue;
  readonly agents: AgentRegistry;
  readonly signal: ScaleSignal;
  readonly deviceClass: string;
  /** The command that starts one agent (argv[0] is the executable). */
  readonly agentCommand: readonly string[];
  readonly tickMs: number;
  readonly onEvent: (e: ScaleEvent) => void;
}

export type ScaleEvent =
  | {
      readonly at: number;
      readonly kind: 'spawn' | 'ready' | 'stop' | 'exit';
      readonly name: string;
      readonly live: number;
    }
  | {
      readonly at: number;
      readonly kind: 'signal';
      readonly desired: number;
      readonly queued: number;
      readonly live: number;
    };

interface Proc {
  readonly name: string;
  readonly child: ChildProcess;
  stopping: boolean;
}

export class LocalAutoscaler {
  private readonly procs: Proc[] = [];
  private timer: NodeJS.Timeout | null = null;
  private seq = 0;
  private lastDesired = -1;
  private ticking = false;

  constructor(private readonly o: LocalAutoscalerOptions) {}

  start(): void {
    this.timer = setInterval(() => void this.tick(), this.o.tickMs);
    void this.tick();
  }

  get live(): number {
    return this.procs.filter((p) => !p.stopping).length;
  }

  private async tick(): Promise<void> {
    if (this.ticking) return;
    this.ticking = true;
    try {
      const counts = await this.o.queue.counts([this.o.deviceClass]);
      const agents = await this.o.agents.list();
      const s = this.o.signal.compute(counts, agents).find((x) => x.deviceClass === this.o.deviceClass);
      const desired = s?.desired ?? 0;
      if (desired !== this.lastDesired) {
        this.lastDesired = desired;
        this.o.onEvent({ at: Date.now(), kind: 'signal', desired, queued: s?.queued ?? 0, live: this.live });
      }
      while (this.live < desired) this.spawnOne();
      while (this.live > desired) this.stopOne();
    } catch {
      // Redis away: keep the agents we have; the next tick tries again
    } finally {
      this.ticking = false;
    }
  }

  private spawnOne(): void {
    const name = `auto-${process.pid}-${this.seq++}`;
    const [exe, ...args] = this.o.agentCommand;
    const child = spawn(exe!, [...args, '--name', name], { stdio: ['ignore', 'pipe', 'inherit'] });
    const p: Proc = { name, child, stopping: false };
    this.procs.push(p);
    let out = '';
    child.stdout!.on('data', (b: Buffer) => {
      if (out.includes('ready')) return;
      out += b.toString();
      if (out.includes('ready')) this.o.onEvent({ at: Date.now(), kind: 'ready', name, live: this.live });
    });
    child.once('exit', () => {
      const i = this.procs.indexOf(p);
      if (i >= 0) this.procs.splice(i, 1);
      this.o.onEvent({ at: Date.now(), kind: 'exit', name, live: this.live });
    });
    this.o.onEvent({ at: Date.now(), kind: 'spawn', name, live: this.live });
  }

  private stopOne(): void {
    const p = [...this.procs].reverse().find((x) => !x.stopping);
    if (!p) return;
    p.stopping = true;
    p.child.kill('SIGTERM');
    this.o.onEvent({ at: Date.now(), kind: 'stop', name: p.name, live: this.live });
  }

  /** Stops every agent (SIGTERM) and waits for them to leave. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    const all = this.procs.map(
      (p) =>
        new Promise<void>((resolve) => {
          if (p.child.exitCode !== null || p.child.signalCode !== null) return resolve();
          p.child.once('exit', () => resolve());
          if (!p.stopping) p.child.kill('SIGTERM');
        }),
    );
    await Promise.all(all);
  }
}
