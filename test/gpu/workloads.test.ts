// The GPU runner (scripts/gpu/run.sh, npm run test:gpu) runs test/gpu only: the workload backend suite
// lives with the other workload tests and is pulled in here so it also runs on the GPU machine.
import '../workloads/backends.test.js';
