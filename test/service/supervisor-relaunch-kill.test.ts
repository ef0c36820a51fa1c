/**
 * The supervisor kills a server that asked for a relaunch but does not exit (after a hung GPU kernel its
 * exit may wait on the driver forever; only the end of the process stops the kernel), and leaves one
 * that exits in time alone. Real child processes.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, it } from 'node:test';
import { killIfNotExited, RESTART_EXIT_GRACE_MS, relaunchExitGraceMs } from '../../src/cli/supervisor.js';

void describe('supervisor: relaunch asked, exit late', () => {
  void it('SIGKILLs a child still alive after the grace', async () => {
    const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    let killed = false;
    const t0 = Date.now();
    killIfNotExited(child, 200, () => (killed = true));
    const [code, signal] = (await once(child, 'exit')) as [number | null, NodeJS.Signals | null];
    assert.equal(signal, 'SIGKILL');
    assert.equal(code, null);
    assert.equal(killed, true);
    assert.ok(Date.now() - t0 >= 190);
  });

  void it('kills at once a child that asked with a GPU kernel hung (its exit would spin in the driver)', async () => {
    assert.equal(relaunchExitGraceMs({ type: 'tandem:restart', reason: 'x' }), RESTART_EXIT_GRACE_MS);
    const graceMs = relaunchExitGraceMs({ type: 'tandem:restart', reason: 'x', hungKernel: true });
    assert.equal(graceMs, 0);
    // A child busy in its exit, as a server whose exit waits on a hung kernel's device teardown.
    const child = spawn(
      process.execPath,
      ['-e', 'process.on("exit", () => { for (;;); }); process.exit(75)'],
      {
        stdio: 'ignore',
      },
    );
    await new Promise((r) => setTimeout(r, 300)); // inside its exit handler by now
    let killed = false;
    const t0 = Date.now();
    killIfNotExited(child, graceMs, () => (killed = true));
    const [code, signal] = (await once(child, 'exit')) as [number | null, NodeJS.Signals | null];
    assert.equal(signal, 'SIGKILL');
    assert.equal(code, null);
    assert.equal(killed, true);
    assert.ok(Date.now() - t0 < 1000, `killed ${Date.now() - t0} ms after asking`);
  });

  void it('leaves a child that exits in time alone, and a disarmed timer does nothing', async () => {
    const child = spawn(process.execPath, ['-e', 'setTimeout(() => process.exit(75), 50)'], {
      stdio: 'ignore',
    });
    let killed = false;
    killIfNotExited(child, 300, () => (killed = true));
    const [code] = (await once(child, 'exit')) as [number | null];
    assert.equal(code, 75);
    await new Promise((r) => setTimeout(r, 400));
    assert.equal(killed, false);

    const alive = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 1500)'], { stdio: 'ignore' });
    let killed2 = false;
    const disarm = killIfNotExited(alive, 100, () => (killed2 = true));
    disarm();
    const [code2, signal2] = (await once(alive, 'exit')) as [number | null, NodeJS.Signals | null];
    assert.equal(code2, 0);
    assert.equal(signal2, null);
    assert.equal(killed2, false);
  });
});
