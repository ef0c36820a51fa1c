/**
 * Share groups: who a task's device time is charged to (a service tenant, a job, a user of a shared
 * runtime). Groups have weights; a policy that shares fairly (eager and prio do, see
 * policies/fair-share.ts) gives the next free queue to the group that is most behind in device time
 * per unit of weight, so one group's long run of tasks cannot starve another's short one.
 *
 * A task with no group belongs to the runtime's default group (weight 1). A runtime whose tasks all
 * belong to the default group never enters the fair path: sharing costs nothing until it is used.
 */
import { TandemError } from '../core/errors.js';

/** Longest share group name accepted (names label metrics and traces). */
export const MAX_SHARE_NAME = 128;

export class ShareGroup {
  /** Measured device time of this group's finished tasks, in µs. */
  deviceUs = 0;
  /** Tasks of this group that finished on a device (host reads and writes excluded). */
  tasks = 0;
  /**
   * Stride scheduling's pass: device time charged so far divided by the weight (µs). Owned by the
   * policy; a group that becomes active again starts at the least pass among the active groups, so
   * time it spent idle is no credit.
   */
  pass = 0;
  /** Ready tasks held in the policy, and tasks on devices (kept by the fair policy). */
  pending = 0;
  running = 0;

  constructor(
    readonly name: string,
    private w: number,
    /** The runtime's table it belongs to; null for a policy's own default group. */
    readonly owner: ShareTable | null,
  ) {}

  get weight(): number {
    return this.w;
  }

  set weight(w: number) {
    this.w = checkWeight(w);
  }
}

/** Usage of one share group, as `Runtime.shareUsage()` reports it. */
export interface ShareUsage {
  readonly share: string;
  readonly weight: number;
  /** Device seconds used by finished tasks. */
  readonly deviceSeconds: number;
  readonly tasks: number;
  /** Ready tasks waiting in the scheduler, and tasks on devices now. */
  readonly pending: number;
  readonly running: number;
}

function checkWeight(w: unknown): number {
  if (typeof w !== 'number' || !Number.isFinite(w) || w <= 0 || w > 1e6) {
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      `share weight must be a number in (0, 1e6], got ${typeof w === 'number' ? w : typeof w}`,
    );
  }
  return w;
}

export function checkShareName(name: unknown): string {
  if (typeof name !== 'string' || name.length === 0 || name.length > MAX_SHARE_NAME) {
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      `share must be a non-empty string of at most ${MAX_SHARE_NAME} characters`,
    );
  }
  return name;
}

/** The share groups of one runtime, by name. */
export class ShareTable {
  private readonly groups = new Map<string, ShareGroup>();

  /** The group named `name`, made on first use (weight 1 unless given); a given weight replaces the old. */
  group(name: string, weight?: number): ShareGroup {
    let g = this.groups.get(name);
    if (g === undefined) {
      checkShareName(name);
      g = new ShareGroup(name, weight === undefined ? 1 : checkWeight(weight), this);
      this.groups.set(name, g);
    } else if (weight !== undefined && weight !== g.weight) g.weight = weight;
    return g;
  }

  /** A group given on a submit: a name, or a group of this table (anything else is refused). */
  resolve(share: unknown): ShareGroup {
    if (share instanceof ShareGroup) {
      if (share.owner !== this)
        throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', 'share group belongs to another runtime');
      return share;
    }
    return this.group(checkShareName(share));
  }

  usage(): ShareUsage[] {
    const out: ShareUsage[] = [];
    for (const g of this.groups.values())
      out.push({
        share: g.name,
        weight: g.weight,
        deviceSeconds: g.deviceUs / 1e6,
        tasks: g.tasks,
        pending: g.pending,
        running: g.running,
      });
    return out;
  }

  get size(): number {
    return this.groups.size;
  }
}
