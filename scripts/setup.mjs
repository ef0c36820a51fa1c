#!/usr/bin/env node
// Runs before `npm start` and `npm test`: on a fresh clone (no node_modules, or a lockfile newer than
// the install) it installs the exact locked dependencies first, so the README's two commands work as
// written. Plain JavaScript because TypeScript itself is one of the dependencies.
import { existsSync, statSync } from 'node:fs';
import { spawnSync } from 'node:child_process';

const marker = 'node_modules/.package-lock.json';
const stale = !existsSync(marker) || statSync('package-lock.json').mtimeMs > statSync(marker).mtimeMs + 1000;
if (stale) {
  console.log('tandem: installing the locked dependencies (npm ci) ...');
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const r = spawnSync(npm, ['ci', '--no-audit', '--no-fund'], { stdio: 'inherit' });
  if (r.status !== 0) process.exit(r.status ?? 1);
}
