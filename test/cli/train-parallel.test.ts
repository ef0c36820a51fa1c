/**
 * `tandem train … --gpus N --parallel MODE`: the flags are in `train --help`, a bad mode is a usage
 * error with the closest match, an impossible request is refused before any data or device loads
 * (stable codes, exit 2), and asking for more GPUs than the machine has names the ones it has;
 * --sequences trains to the same losses.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runCli } from './cli-process.js';

void test('train --help lists --gpus, --parallel, --micro-batches and --schedule', async () => {
  const r = await runCli(['train', '--help']);
  assert.equal(r.code, 0, r.stderr);
  for (const flag of ['--gpus <n>', '--parallel <mode>', '--micro-batches <n>', '--schedule <kind>'])
    assert.ok(r.stdout.includes(flag), `${flag} in:\n${r.stdout}`);
  assert.match(r.stdout, /data \(gradient all-reduce; the\s+default\), zero1 .* pipeline/s);
});

void test('bad multi-GPU requests exit 2 with stable codes, before loading data or devices', async () => {
  const cases: [string[], string, RegExp][] = [
    [['--parallel', 'zero2'], 'TANDEM_ERR_INVALID_ARGUMENT', /"zero2" is not known \(did you mean zero1\?\)/],
    [['--gpus', '0'], 'TANDEM_ERR_INVALID_ARGUMENT', /--gpus <n>' argument '0' is invalid/],
    [['--parallel', 'pipeline'], 'TANDEM_ERR_INVALID_ARGUMENT', /needs at least 2 GPUs \(gpus is 1\)/],
    [
      ['--gpus', '3', '--parallel', 'pipeline', '--preset', 'gpt-micro'],
      'TANDEM_ERR_INVALID_ARGUMENT',
      /3 stages for a model of 2 layers/,
    ],
    [
      ['--gpus', '2', '--parallel', 'pipeline', '--batch', '6', '--micro-batches', '4'],
      'TANDEM_ERR_INVALID_ARGUMENT',
      /4 micro-batches do not divide the batch of 6/,
    ],
    [['--gpus', '2', '--device', 'cuda1'], 'TANDEM_ERR_INVALID_ARGUMENT', /takes the first 2 GPUs itself/],
    [['--gpus', '2', '--checkpoint', '/tmp/nowhere'], 'TANDEM_ERR_UNSUPPORTED', /--checkpoint and --resume/],
    [['--gpus', '2', '--parallel', 'pipeline', '--precision', 'fp16'], 'TANDEM_ERR_UNSUPPORTED', /f16/],
    [
      ['--gpus', '2', '--static-step'],
      'TANDEM_ERR_UNSUPPORTED',
      /recorded step \(staticStep\) runs on one device, not 2/,
    ],
  ];
  for (const [args, code, message] of cases) {
    const r = await runCli(['train', 'gpt', ...args, '--json'], { timeoutMs: 20_000 });
    const shown = `tandem train gpt ${args.join(' ')}`;
    assert.equal(r.code, 2, `${shown}: ${r.stdout} ${r.stderr}`);
    const err = (JSON.parse(r.stdout) as { error: { code: string; message: string } }).error;
    assert.equal(err.code, code, shown);
    assert.match(err.message, message, shown);
  }
});

void test(
  'more GPUs than the machine has: DEVICE_ABSENT naming the GPUs present',
  { timeout: 120_000 },
  async (t) => {
    const r = await runCli(
      ['train', 'gpt', '--gpus', '16', '--parallel', 'data', '--preset', 'gpt-micro', '--json'],
      { timeoutMs: 100_000 },
    );
    const err = (
      JSON.parse(r.stdout.trim().split('\n').pop()!) as { error?: { code: string; message: string } }
    ).error;
    if (err === undefined) return t.skip('this machine has 16 GPUs');
    assert.equal(err.code, 'TANDEM_ERR_DEVICE_ABSENT', r.stdout);
    assert.match(err.message, /the run asks for 16 GPUs; this machine has \d+/);
    assert.notEqual(r.code, 0);
  },
);

void test(
  'train --sequences: the same losses as --no-sequences, a task per kernel (CPU)',
  { timeout: 120_000 },
  async () => {
    const losses = async (extra: string[]): Promise<number[]> => {
      const args = [
        'train',
        'gpt',
        '--preset',
        'gpt-micro',
        '--steps',
        '3',
        '--batch',
        '2',
        '--seq-len',
        '16',
      ];
      const r = await runCli([...args, '--device', 'cpu', '--json', ...extra], { timeoutMs: 100_000 });
      assert.equal(r.code, 0, r.stderr);
      const steps = r.stdout
        .split('\n')
        .filter((l) => l.startsWith('{"event":"step"'))
        .map((l) => (JSON.parse(l) as { loss: number }).loss);
      assert.equal(steps.length, 3, r.stdout);
      return steps;
    };
    assert.deepEqual(await losses(['--sequences']), await losses(['--no-sequences']));
  },
);
