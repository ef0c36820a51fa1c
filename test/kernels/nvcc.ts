/** Whether nvcc (the CUDA toolkit) is here: false when it is, else why not (the tests that compile CUDA skip with it). */
import { execFileSync } from 'node:child_process';

export function nvccUnavailable(): string | false {
  try {
    execFileSync('nvcc', ['--version'], { stdio: 'ignore' });
    return false;
  } catch (e) {
    return `nvcc is not available here (${(e as Error).message.split('\n')[0]})`;
  }
}
