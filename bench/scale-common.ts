/** Shared by the scale benchmarks: agent processes of `tandem agent` started and stopped on loopback. */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

export const MAIN = join(process.cwd(), 'dist', 'src', 'cli', 'main.js');

export interface AgentProc {
  readonly name: string;
  readonly child: ChildProcess;
  /** Everything the agent printed so far (its last line says how many jobs it ran). */
  output(): string;
}

export function startAgent(name: string, args: readonly string[]): Promise<AgentProc> {
  const child = spawn(process.execPath, [MAIN, 'agent', '--name', name, '--backends', 'none', ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    let out = '';
    let ready = false;
    const onData = (b: Buffer) => {
      out += b.toString();
      if (!ready && out.includes('ready')) {
        ready = true;
        resolve({ name, child, output: () => out });
      }
    };
    child.stdout!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`agent ${name} exited with ${String(code)}: ${out}`)));
  });
}

export function stopAgent(a: AgentProc, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  return new Promise((resolve) => {
    if (a.child.exitCode !== null || a.child.signalCode !== null) return resolve();
    a.child.removeAllListeners('exit');
    a.child.once('exit', () => resolve());
    a.child.kill(signal);
  });
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function pct(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** Jobs an agent says it ran, from its closing line ("stopped after N jobs"). */
export function jobsRan(a: AgentProc): number {
  const m = /stopped after (\d+) jobs/.exec(a.output());
  return m ? Number(m[1]) : 0;
}
