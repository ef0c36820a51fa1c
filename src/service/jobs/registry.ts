/**
 * The job type registry: one per service instance (no globals), so tests build isolated services.
 * Built-in types are added by `defaultJobTypes()`; workloads that exist in this build are wired in.
 */
import { TandemError } from '../../core/errors.js';
import type { AnyJobType } from './job-type.js';

export class JobTypeRegistry {
  private readonly types = new Map<string, AnyJobType>();

  register(t: AnyJobType): void {
    if (!/^[a-z][a-z0-9-]{0,31}$/.test(t.name))
      throw new TandemError(
        'TANDEM_ERR_INVALID_ARGUMENT',
        `job type name "${t.name}" must be lower-case kebab`,
      );
    if (this.types.has(t.name))
      throw new TandemError('TANDEM_ERR_CONFLICT', `job type "${t.name}" is registered`);
    this.types.set(t.name, t);
  }

  get(name: string): AnyJobType {
    const t = this.types.get(name);
    if (!t)
      throw new TandemError('TANDEM_ERR_UNKNOWN_JOB_TYPE', `unknown job type "${name}"`, {
        type: name,
        known: [...this.types.keys()],
      });
    return t;
  }

  has(name: string): boolean {
    return this.types.has(name);
  }

  list(): AnyJobType[] {
    return [...this.types.values()];
  }
}
