/**
 * The `run md | option | var` flags and the workloads' parameters stay one set: every parameter a
 * workload's validator knows has a flag, and every flag is a parameter it knows (read from the
 * validator's own "known:" list, so a parameter added to a workload without a flag fails here).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { WORKLOAD_FLAGS } from '../../src/cli/workload-flags.js';
import { WORKLOAD_JOB_TYPES } from '../../src/workloads/index.js';

const camel = (flag: string): string => flag.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());

void test('each workload flag is a parameter of the workload and each parameter has a flag', () => {
  for (const name of ['md', 'option', 'var'] as const) {
    let known: string[] = [];
    try {
      WORKLOAD_JOB_TYPES[name].validate({ notAParameter: 1 });
    } catch (e) {
      const m = /known: ([^)]*)\)/.exec((e as Error).message);
      assert.ok(m, `${name}: the validator lists what it knows: ${(e as Error).message}`);
      known = m[1]!.split(', ');
    }
    const flags = WORKLOAD_FLAGS[name].map((f) => camel(f.flag));
    assert.deepEqual([...flags].sort(), [...known].sort(), `${name}: flags = parameters`);
  }
});
