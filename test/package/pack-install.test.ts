/**
 * Tandem as an npm package, the way another project gets it: `npm pack` here, `npm install <tarball>`
 * in a fresh project, then a TypeScript file that imports `tandem`, `tandem/service` and
 * `tandem/workloads` type-checks with tsc (the shipped .d.ts, lib check on) and runs: a CPU runtime does
 * an axpy and the result is checked.
 *
 * No network: the new project's node_modules gets this repository's installed runtime dependencies
 * (their closure, read from package-lock.json) as hard links — never symlinks into the shared tree,
 * so nothing npm does in the temporary project can touch this repository's node_modules — and
 * `npm install --offline` then only adds the tarball.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  linkSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';

const repo = process.cwd();

interface LockEntry {
  readonly version?: string;
  readonly dependencies?: Readonly<Record<string, string>>;
  readonly optionalDependencies?: Readonly<Record<string, string>>;
  readonly peerDependencies?: Readonly<Record<string, string>>;
}

/** The node_modules paths (as in package-lock.json) that the package's runtime dependencies need. */
function runtimeClosure(): string[] {
  const lock = JSON.parse(readFileSync(join(repo, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, LockEntry>;
  };
  const pkg = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as {
    dependencies: Record<string, string>;
  };
  // Node's lookup: the nearest node_modules/<name> from the requiring package upwards.
  const resolve = (from: string, name: string): string | null => {
    let base = from;
    for (;;) {
      const candidate = base ? `${base}/node_modules/${name}` : `node_modules/${name}`;
      if (lock.packages[candidate] && existsSync(join(repo, candidate))) return candidate;
      if (!base) return null;
      const cut = base.lastIndexOf('/node_modules/');
      base = cut < 0 ? '' : base.slice(0, cut);
    }
  };
  const seen = new Set<string>();
  const queue = Object.keys(pkg.dependencies).map((n) => resolve('', n));
  while (queue.length) {
    const at = queue.pop();
    if (!at || seen.has(at)) continue;
    seen.add(at);
    const e = lock.packages[at]!;
    const names = [e.dependencies, e.optionalDependencies, e.peerDependencies].flatMap((d) =>
      Object.keys(d ?? {}),
    );
    for (const n of names) queue.push(resolve(at, n));
  }
  return [...seen];
}

/** Copies a tree as hard links (a copy where links cannot be made), symlinks as symlinks. */
function linkTree(src: string, dst: string): void {
  mkdirSync(dst, { recursive: true });
  for (const name of readdirSync(src)) {
    const s = join(src, name);
    const d = join(dst, name);
    const st = lstatSync(s);
    if (st.isSymbolicLink()) symlinkSync(readlinkSync(s), d);
    else if (st.isDirectory()) linkTree(s, d);
    else
      try {
        linkSync(s, d);
      } catch {
        copyFileSync(s, d);
      }
  }
}

const timings: string[] = [];

function run(label: string, cmd: string, args: string[], cwd: string): string {
  const t0 = performance.now();
  const r = spawnSync(cmd, args, {
    cwd,
    encoding: 'utf8',
    timeout: 120_000,
    env: {
      ...process.env,
      npm_config_audit: 'false',
      npm_config_fund: 'false',
      npm_config_update_notifier: 'false',
    },
  });
  assert.equal(
    r.status,
    0,
    `${cmd} ${args.join(' ')} failed (${r.status ?? r.signal}):\n${r.stdout}\n${r.stderr}`,
  );
  timings.push(`${label} ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  return r.stdout;
}

const CONSUMER = `import { Runtime, TandemError, isTandemError, type DType, type Observer } from 'tandem';
import { createService, defineJobType } from 'tandem/service';
import { WORKLOAD_JOB_TYPES } from 'tandem/workloads';
import type { paths } from 'tandem/client';

// The typed client's types (README quick start): a path of the API, checked by tsc.
const submitPath: keyof paths & '/v1/jobs' = '/v1/jobs';

const dtype: DType = 'f64';
const ends: string[] = [];
const watch: Observer = {
  onTaskEnd: (e) => {
    if (!e.op.startsWith('__')) ends.push(e.op); // host reads are tasks too
  },
};
const rt = await Runtime.create({ backends: ['cpu'], calibrate: false, cacheDir: process.argv[2] });
rt.addObserver(watch);
const x = rt.tensor([4], dtype, [1, 2, 3, 4]);
const y = rt.tensor([4], dtype, [10, 20, 30, 40]);
await rt.submit({ kernel: 'axpy', args: { x, y }, scalars: { alpha: 2 } }).done;
const out = Array.from(await rt.read(y));
let code = '';
try {
  rt.tensor([-1], dtype);
} catch (e) {
  if (isTandemError(e)) code = e.code;
}
await rt.close();
console.log(JSON.stringify({
  out,
  ends,
  code,
  errorClass: new TandemError('TANDEM_ERR_CONFIG', 'x') instanceof Error,
  service: typeof createService === 'function' && typeof defineJobType === 'function',
  workloads: Object.keys(WORKLOAD_JOB_TYPES).sort(),
  client: submitPath,
}));
`;

describe('npm package', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tandem-pack-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('packs, installs into a fresh project, type-checks and runs `import { Runtime } from "tandem"`', (t) => {
    // The tarball of what is built now (npm test builds first); prepare would only build again.
    const packed = JSON.parse(
      run('npm pack', 'npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', dir], repo),
    ) as {
      filename: string;
      files: { path: string }[];
    }[];
    const files = packed[0]!.files.map((f) => f.path);
    for (const f of [
      'dist/src/index.js',
      'dist/src/index.d.ts',
      'dist/src/service/index.d.ts',
      'dist/src/workloads/index.d.ts',
      'dist/src/devices/cpu/worker.js',
      'dist/src/devices/cpu/wasm/gemm.wasm',
      'dist/bench/overhead.js', // `tandem bench overhead` loads it
      'bin/tandem.js',
    ])
      assert.ok(files.includes(f), `the tarball lacks ${f}`);
    assert.ok(
      !files.some((f) => f.startsWith('src/') || f.startsWith('dist/test/') || f.endsWith('.map')),
      'sources or maps shipped',
    );

    const project = join(dir, 'consumer');
    mkdirSync(project);
    writeFileSync(
      join(project, 'package.json'),
      JSON.stringify({ name: 'consumer', private: true, type: 'module' }),
    );
    for (const p of runtimeClosure()) linkTree(join(repo, p), join(project, p));
    run(
      'npm install',
      'npm',
      [
        'install',
        join(dir, packed[0]!.filename),
        '--offline',
        '--no-package-lock',
        '--ignore-scripts',
        '--omit=dev',
      ],
      project,
    );
    assert.ok(existsSync(join(project, 'node_modules/tandem/dist/src/index.js')));

    writeFileSync(join(project, 'main.ts'), CONSUMER);
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          skipLibCheck: false,
          types: ['node'],
          outDir: 'out',
        },
        files: ['main.ts'],
      }),
    );
    run('tsc', process.execPath, [join(repo, 'node_modules/typescript/bin/tsc'), '-p', project], project);
    const line = run(
      'node main.js',
      process.execPath,
      [join(project, 'out/main.js'), join(dir, 'cache')],
      project,
    )
      .trim()
      .split('\n')
      .pop()!;
    const result = JSON.parse(line) as Record<string, unknown>;
    assert.deepEqual(result, {
      out: [12, 24, 36, 48],
      ends: ['axpy'],
      code: 'TANDEM_ERR_SIZE',
      errorClass: true,
      service: true,
      workloads: ['md', 'option', 'var'],
      client: '/v1/jobs',
    });
    t.diagnostic(`steps: ${timings.join(', ')}`);
  });
});
