/** Policies by name, chosen by configuration. */
import { TandemError } from '../../core/errors.js';
import { EagerPolicy } from './eager.js';
import type { SchedulerPolicy } from './policy.js';
import { PrioPolicy } from './prio.js';
import { DmdaPolicy } from './dmda.js';
import { WorkStealingPolicy } from './ws.js';

export const POLICIES: Readonly<Record<string, () => SchedulerPolicy>> = {
  eager: () => new EagerPolicy(),
  prio: () => new PrioPolicy(),
  ws: () => new WorkStealingPolicy(),
  dmda: () => new DmdaPolicy({ sorted: false }),
  dmdas: () => new DmdaPolicy({ sorted: true }),
};

export function createPolicy(spec: string | SchedulerPolicy | undefined): SchedulerPolicy {
  if (spec === undefined) return new EagerPolicy();
  if (typeof spec !== 'string') return spec;
  const make = POLICIES[spec];
  if (!make) {
    throw new TandemError(
      'TANDEM_ERR_CONFIG',
      `unknown scheduler ${JSON.stringify(spec)}; choose one of ${Object.keys(POLICIES).join(', ')}`,
    );
  }
  return make();
}
