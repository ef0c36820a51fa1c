/** Shared by the scale benchmarks: agent processes of `tandem agent` started and stopped on loopback. */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

export const MAIN = join(process.cwd(), 'dist', 'src', 'cli', 'main.js');

export interface AgentProc {
  readonly name: string;
  readonly child: ChildProcess;
}

export function startAgent(name: string, args: readonly string[]): Promise<AgentProc> {
  const child = spawn(process.execPath, [MAIN, 'agent', '--name', name, '--backends', 'none', ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    let out = '';
    const onData = (b: Buffer) => {
      out += b.toString();
      if (out.includes('ready')) {
        child.stdout!.off('data', onData);
        child.stdout!.resume();
        resolve({ name, child });
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
