/** The job types a service starts with. Workload types are added when their module exists in this build. */
import type { JobTypeRegistry } from './registry.js';
import { customKernelJob } from './types/custom-kernel.js';
import { gemmJob } from './types/gemm.js';
import { sleepJob } from './types/sleep.js';
import { trainJob } from './types/train.js';
import { loadWorkloadJobTypes } from './types/workloads.js';

export async function registerBuiltinJobTypes(
  registry: JobTypeRegistry,
  warn: (msg: string) => void = (msg) => process.stderr.write(`[tandem warn] ${msg}\n`),
  options: { readonly dataDir?: string } = {},
): Promise<void> {
  registry.register(gemmJob);
  // Training keeps its checkpoints and tokenized corpora under the service's data directory.
  registry.register(trainJob(options.dataDir ?? '.tandem/data'));
  registry.register(sleepJob);
  registry.register(customKernelJob);
  for (const t of await loadWorkloadJobTypes(warn)) registry.register(t);
}
