/**
 * The Node flags `tandem serve`'s supervisor gives its server process: a 16 MiB young generation unless
 * TANDEM_SEMI_SPACE_MB says otherwise or the flags were given explicitly; a bad value is reported.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { serverExecArgv } from '../../src/cli/supervisor.js';

function flags(env: NodeJS.ProcessEnv, own: string[] = []): { argv: string[]; warnings: string[] } {
  const warnings: string[] = [];
  const argv = serverExecArgv(own, env, (m) => warnings.push(m));
  return { argv, warnings };
}

void describe('serverExecArgv', () => {
  void it('gives a 16 MiB young generation by default', () => {
    assert.deepEqual(flags({}), {
      argv: ['--max-semi-space-size=16', '--min-semi-space-size=16'],
      warnings: [],
    });
  });

  void it('takes TANDEM_SEMI_SPACE_MB, and 0 leaves V8 its default', () => {
    assert.deepEqual(flags({ TANDEM_SEMI_SPACE_MB: '64' }).argv, [
      '--max-semi-space-size=64',
      '--min-semi-space-size=64',
    ]);
    assert.deepEqual(flags({ TANDEM_SEMI_SPACE_MB: '0' }).argv, []);
  });

  void it('reports a value that is not a whole number of MiB and uses the default', () => {
    for (const bad of ['sixteen', '-4', '1.5', '', '99999']) {
      const r = flags({ TANDEM_SEMI_SPACE_MB: bad });
      assert.deepEqual(r.argv, ['--max-semi-space-size=16', '--min-semi-space-size=16'], bad);
      assert.equal(r.warnings.length, 1, bad);
      assert.match(r.warnings[0]!, /TANDEM_SEMI_SPACE_MB=.* is not a whole number of MiB/);
    }
  });

  void it('leaves explicit flags alone (own execArgv or NODE_OPTIONS)', () => {
    assert.deepEqual(flags({}, ['--max-semi-space-size=8']).argv, ['--max-semi-space-size=8']);
    assert.deepEqual(flags({ NODE_OPTIONS: '--min-semi-space-size=4' }).argv, []);
  });
});
