/**
 * The runtime's side of sequences (built in sequence.ts): `submitSequence`, `prepareSequence` and
 * `submitPrepared`. A request is validated once into a PreparedSequence, which becomes one task each
 * time it is submitted (task-submitter.ts). The runtime has checked that it is open.
 */
import { TandemError } from '../core/errors.js';
import type { Tensor } from '../memory/tensor.js';
import type { KernelEligibility } from './kernel-eligibility.js';
import {
  PreparedSequence,
  SEQUENCE_REQUEST_DEF,
  buildSequence,
  requestFields,
  type SequenceHost,
  type SequenceRequest,
} from './sequence.js';
import type { ShareGroup, ShareTable } from './shares.js';
import { validateSubmit } from './submit.js';
import type { Task } from './task.js';
import type { TaskSubmitter } from './task-submitter.js';

/** What sequences need of the runtime (structural: no import of runtime.ts). */
export interface SequenceRuntime {
  readonly kernels: SequenceHost['kernels'];
  readonly devices: SequenceHost['devices'];
  readonly shares: ShareTable;
  checkTensor(t: unknown, what: string): asserts t is Tensor;
}

export class SequenceSubmitter {
  private readonly host: SequenceHost;

  /** `rt` owns the prepared sequences: one runs only on the runtime that prepared it. */
  constructor(
    private readonly rt: SequenceRuntime,
    eligibility: KernelEligibility,
    private readonly tasks: TaskSubmitter,
  ) {
    this.host = {
      kernels: rt.kernels,
      devices: rt.devices,
      checkTensor: (t: unknown, what: string): asserts t is Tensor => rt.checkTensor(t, what),
      modesOf: (def, scalars) => eligibility.modesOf(def, scalars),
    };
  }

  /** `Runtime.submitSequenceCharged`: charged to `fallback` when the request names no share group. */
  submit(req: SequenceRequest, fallback: ShareGroup | null): Task {
    const { prepared, deps } = this.validate(req, fallback, true);
    return this.tasks.sequence(prepared, prepared.tags, deps, false);
  }

  /** `Runtime.prepareSequenceCharged`: charged to `fallback` when the request names no share group. */
  prepare(req: SequenceRequest, fallback: ShareGroup | null): PreparedSequence {
    if (req?.deps !== undefined)
      throw new TandemError(
        'TANDEM_ERR_INVALID_ARGUMENT',
        'prepareSequence: deps belong to a submission, not to a prepared sequence',
      );
    return this.validate(req, fallback, false).prepared;
  }

  /** Runs a prepared sequence again (`tags` replace its labels for this run); no step is revalidated. */
  submitPrepared(p: PreparedSequence, tags: Readonly<Record<string, string>> | undefined): Task {
    if (!(p instanceof PreparedSequence) || p.owner !== this.rt)
      throw new TandemError(
        'TANDEM_ERR_INVALID_ARGUMENT',
        'submitPrepared: not a sequence prepared by this runtime',
      );
    for (const t of p.built.tensors) this.rt.checkTensor(t, `submitPrepared(${p.name})`);
    return this.tasks.sequence(p, tags ?? p.tags, [], true);
  }

  /** Every step and the request-level fields validated: what a submission or a preparation starts from. */
  private validate(
    req: SequenceRequest,
    fallback: ShareGroup | null,
    withDeps: boolean,
  ): { prepared: PreparedSequence; deps: readonly Task[] } {
    const rt = this.rt;
    const seq = buildSequence(this.host, req);
    const v = validateSubmit(rt, SEQUENCE_REQUEST_DEF, requestFields(req, withDeps));
    const share = req.share === undefined ? fallback : rt.shares.resolve(req.share);
    const name = req.name ?? `sequence of ${req.steps.length}`;
    const prepared = new PreparedSequence(rt, seq, name, v.priority, v.constraint, req.tags, share);
    return { prepared, deps: v.deps };
  }
}
