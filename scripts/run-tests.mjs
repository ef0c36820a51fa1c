#!/usr/bin/env node
// Runs the compiled tests (dist/test/**/*.test.js) with Node's own test runner.
// `--gpu` runs the GPU suites (test/gpu/) instead; they need a GPU machine.
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';

const gpu = process.argv.includes('--gpu');
const filters = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const root = join(process.cwd(), 'dist', 'test');

function walk(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...walk(p));
    else if (name.endsWith('.test.js')) out.push(p);
  }
  return out;
}

const files = walk(root)
  .filter((f) => f.includes(`${join('test', 'gpu')}/`) === gpu)
  .filter((f) => filters.length === 0 || filters.some((s) => f.includes(s)))
  .sort();
if (files.length === 0) {
  console.error('no test files found under dist/test; run `npm run build` first');
  process.exit(1);
}
const res = spawnSync(process.execPath, ['--test', '--test-reporter=spec', ...files], { stdio: 'inherit' });
process.exit(res.status ?? 1);
