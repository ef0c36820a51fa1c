/**
 * A reader that goes away (`tandem types --json | head -c 0`): the CLI ends quietly with its own exit
 * code instead of an unhandled EPIPE 'error' event's stack trace and exit 1.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { it } from 'node:test';
import { MAIN } from './cli-process.js';

void it('a closed stdout pipe ends the CLI quietly with exit 0', async () => {
  const child = spawn(process.execPath, [MAIN, 'types', '--json'], { stdio: ['ignore', 'pipe', 'pipe'] });
  // Closed before the command writes anything: its first write fails with EPIPE.
  child.stdout.destroy();
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
  assert.equal(stderr, '', 'nothing on stderr');
  assert.equal(code, 0);
});
