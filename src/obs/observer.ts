/**
 * Observers see read-only views of what the runtime does. With no observer attached the runtime
 * builds no event objects at all, so observing costs nothing when nobody listens.
 */
export interface TaskEvent {
  readonly taskId: number;
  readonly name: string;
  readonly op: string;
  readonly deviceId: string;
  readonly queueId: string;
  /** Microseconds on the runtime clock (performance.now() * 1000). */
  readonly submitUs: number;
  readonly readyUs: number;
  readonly startUs: number;
  readonly endUs: number;
  readonly ok: boolean;
  readonly errorCode?: string;
  /** Why the scheduler put the task here (expected times per candidate), when the policy says. */
  readonly placement?: string;
  readonly flops: number;
  readonly bytes: number;
  /** Free-form labels (job id, tenant) set at submit. */
  readonly tags?: Readonly<Record<string, string>>;
}

export interface TransferEvent {
  readonly tensorId: number;
  readonly bytes: number;
  readonly from: string;
  readonly to: string;
  readonly engine: string;
  readonly startUs: number;
  readonly endUs: number;
  readonly tags?: Readonly<Record<string, string>>;
}

export interface Observer {
  onTaskStart?(e: TaskEvent): void;
  onTaskEnd?(e: TaskEvent): void;
  onTransfer?(e: TransferEvent): void;
}

export { nowUs } from '../core/clock.js';
