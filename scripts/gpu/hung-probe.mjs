// Diagnoses the hung-kernel path on a GPU machine (scripts/gpu/hung-diag.sh runs it): a supervised
// `tandem serve` runs a kernel that never ends (timeoutSeconds 3); /healthz is probed every 500 ms
// with a 1 s limit and, while it does not answer, the server's main thread's kernel wait channel and
// state are read from /proc. Steps: warm gemm, the spin kernel, then (unless PROBE_NO_GEMM=1) a cuda
// gemm of another size queued behind it. Prints one line per event; ends after PROBE_SECONDS.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const t0 = Date.now();
const log = (m) => console.log(`[${((Date.now() - t0) / 1000).toFixed(1)}s] ${m}`);
const dir = mkdtempSync(join(tmpdir(), 'hung-probe-'));
const proc = spawn(
  process.execPath,
  [
    'dist/src/cli/main.js',
    'serve',
    '--port',
    '0',
    '--data-dir',
    dir,
    '--backends',
    'cuda,cpu',
    '--no-calibrate',
    '--json',
  ],
  {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, TANDEM_LOG: 'info', TANDEM_DEADLINE_GRACE_MS: '2000' },
  },
);
proc.stderr.on('data', (d) => process.stderr.write(`[serve ${((Date.now() - t0) / 1000).toFixed(1)}s] ${d}`));
const urls = [];
let buf = '';
proc.stdout.on('data', (d) => {
  buf += d;
  for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
    const line = buf.slice(0, i);
    buf = buf.slice(i + 1);
    try {
      const j = JSON.parse(line);
      if (j.url) {
        urls.push(j.url);
        log(`serving ${line}`);
      }
    } catch {
      log(`stdout ${line}`);
    }
  }
});
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
while (urls.length === 0) await sleep(100);
const url = urls[0];
const key = readFileSync(join(dir, 'admin-key.txt'), 'utf8').trim();
const call = async (method, path, body, timeoutMs = 1000) => {
  const res = await fetch(`${url}${path}`, {
    method,
    signal: AbortSignal.timeout(timeoutMs),
    headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  return res.json();
};
/** The server process: the supervisor's child (the one whose cmdline says serve and is not proc). */
const serverPids = () => {
  const out = [];
  for (const p of readdirSync('/proc')) {
    if (!/^\d+$/.test(p) || Number(p) === proc.pid) continue;
    try {
      const st = readFileSync(`/proc/${p}/stat`, 'utf8');
      const ppid = Number(st.slice(st.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === proc.pid) out.push(Number(p));
    } catch {
      /* gone */
    }
  }
  return out;
};
const threads = (pid) => {
  const rows = [];
  try {
    for (const t of readdirSync(`/proc/${pid}/task`)) {
      const comm = readFileSync(`/proc/${pid}/task/${t}/comm`, 'utf8').trim();
      const st = readFileSync(`/proc/${pid}/task/${t}/stat`, 'utf8');
      const state = st.slice(st.lastIndexOf(')') + 2).split(' ')[0];
      let wchan = '';
      try {
        wchan = readFileSync(`/proc/${pid}/task/${t}/wchan`, 'utf8');
      } catch {
        /* not readable */
      }
      let stack = '';
      try {
        stack = readFileSync(`/proc/${pid}/task/${t}/stack`, 'utf8').split('\n').slice(0, 3).join('|');
      } catch {
        /* not readable */
      }
      if (t === String(pid) || state === 'R' || state === 'D')
        rows.push(`${t}/${comm}/${state}/${wchan}/${stack}`);
    }
  } catch (e) {
    rows.push(String(e));
  }
  return rows.join(' ; ');
};
const probeFor = async (ms, label) => {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const s = Date.now();
    try {
      const h = await call('GET', '/healthz');
      log(`${label} healthz ${Date.now() - s} ms ${h.status ?? JSON.stringify(h).slice(0, 80)}`);
    } catch (e) {
      log(
        `${label} healthz no answer in ${Date.now() - s} ms (${e.name}); server ${serverPids()
          .map((p) => `${p}: ${threads(p)}`)
          .join(' || ')}`,
      );
    }
    await sleep(500);
  }
};
const job = async (id) => {
  try {
    const j = await call('GET', `/v1/jobs/${id}`);
    return `${j.state}${j.error ? ` ${j.error.code}` : ''}`;
  } catch (e) {
    return `? (${e.name})`;
  }
};
const warm = await call('POST', '/v1/jobs', { type: 'gemm', params: { n: 256, device: 'cuda' } }, 30_000);
for (let i = 0; i < 300 && !/succeeded|failed/.test(await job(warm.id)); i++) await sleep(100);
log(`warm gemm ${await job(warm.id)}`);
const hung = await call(
  'POST',
  '/v1/jobs',
  {
    type: 'custom-kernel',
    timeoutSeconds: 3,
    params: {
      language: 'cuda',
      source: 'extern "C" __global__ void tdm_spin(float* p) { while (*(volatile float*)p > 0.0f) { } }',
      entry: 'tdm_spin',
      tensors: [{ name: 'p', shape: [64], dtype: 'f32', mode: 'rw', init: 'ones' }],
      params: [{ tensor: 'p' }],
      grid: [1],
      block: [1],
    },
  },
  30_000,
);
log(`hung submitted ${hung.id}`);
await probeFor(3000, 'after spin');
let gemm;
if (process.env.PROBE_NO_GEMM !== '1') {
  try {
    gemm = await call('POST', '/v1/jobs', { type: 'gemm', params: { n: 512, device: 'cuda' } }, 5000);
    log(`gemm submitted ${gemm.id}`);
  } catch (e) {
    log(`gemm submit: no answer (${e.name})`);
  }
}
await probeFor(Number(process.env.PROBE_SECONDS ?? 25) * 1000, 'later');
log(`hung ${await job(hung.id)}; gemm ${gemm ? await job(gemm.id) : '-'}; servers launched ${urls.length}`);
proc.kill('SIGKILL');
for (const p of serverPids()) {
  try {
    process.kill(p, 'SIGKILL');
  } catch {
    /* gone */
  }
}
process.exit(0);
