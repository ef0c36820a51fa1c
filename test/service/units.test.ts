/** Unit tests of the service's parts: fair queue, hardware rules, fenced commits, hashed keys, config. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { TenantStore } from '../../src/service/auth/tenants.js';
import { DEFAULT_CONFIG, loadServiceConfig, parseHardwareRules } from '../../src/service/config.js';
import { FairQueue, type QueuedJob } from '../../src/service/runner/fair-queue.js';
import { selectPlacement, type DeviceView } from '../../src/service/runner/hardware-rules.js';
import { openDatabase } from '../../src/service/store/db.js';
import { JobStore } from '../../src/service/store/job-store.js';
import { tempDir } from './helpers.js';

let seq = 0;
const job = (tenantId: string, priority = 0): QueuedJob => ({
  id: `j${++seq}`,
  seq,
  tenantId,
  priority,
  memBytes: 0,
});

void test('fair queue: weighted shares between tenants, priority within a tenant, no banked credit', () => {
  const weights: Record<string, number> = { a: 2, b: 1, c: 1 };
  const q = new FairQueue((t) => weights[t] ?? 1);
  for (let i = 0; i < 30; i++) q.push(job('a'));
  for (let i = 0; i < 30; i++) q.push(job('b'));
  const first30 = Array.from({ length: 30 }, () => q.next(() => true)!.tenantId);
  assert.equal(first30.filter((t) => t === 'a').length, 20, 'weight 2 gets two thirds');
  // A tenant arriving late competes from the current pass, it does not get a burst of catch-up.
  for (let i = 0; i < 10; i++) q.push(job('c'));
  const next6 = Array.from({ length: 6 }, () => q.next(() => true)!.tenantId);
  assert.ok(next6.filter((t) => t === 'c').length <= 3, next6.join(','));
  const p = new FairQueue(() => 1);
  const low = job('a', 0);
  const high = job('a', 5);
  p.push(low);
  p.push(high);
  assert.equal(p.next(() => true)!.id, high.id);
  // Removal (cancel) and eligibility (quota) are honoured.
  const r = new FairQueue(() => 1);
  const x = job('a');
  const y = job('b');
  r.push(x);
  r.push(y);
  r.remove(x.id);
  assert.equal(
    r.next((j) => j.tenantId !== 'b'),
    null,
  );
  assert.equal(r.next(() => true)!.id, y.id);
  assert.equal(r.size, 0);
});

void test('hardware rules: class → device class, strict rules, requested device wins', () => {
  const devices: DeviceView[] = [
    { id: 'cpu0', kind: 'cpu', memoryBytes: 64e9, peakFlops: { f32: 1e11 } },
    { id: 'cuda0', kind: 'cuda', memoryBytes: 16e9, peakFlops: { f32: 1e13 } },
    { id: 'cuda1', kind: 'cuda', memoryBytes: 80e9, peakFlops: { f32: 6e13 } },
  ];
  const rules = parseHardwareRules('training=largest-gpu,latency=smallest-gpu,batch=cpu,special=webgpu!');
  assert.equal(selectPlacement(rules, 'training', undefined, devices).device, 'cuda1');
  assert.equal(selectPlacement(rules, 'latency', undefined, devices).device, 'cuda0');
  assert.equal(selectPlacement(rules, 'batch', undefined, devices).device, 'cpu');
  assert.equal(selectPlacement(rules, 'training', 'cpu0', devices).device, 'cpu0');
  assert.equal(selectPlacement(rules, 'unknown', undefined, devices).device, undefined);
  assert.throws(() => selectPlacement(rules, 'special', undefined, devices), /TANDEM_ERR_NO_DEVICE/);
  const cpuOnly = devices.slice(0, 1);
  const pref = selectPlacement(rules, 'training', undefined, cpuOnly);
  assert.equal(pref.device, undefined, 'a preference falls back to the scheduler');
  assert.match(pref.reason, /none here/);
  assert.throws(() => parseHardwareRules('training'), /TANDEM_ERR_CONFIG/);
  // A software rasterizer (llvmpipe behind WebGPU) is not what a GPU rule asks for.
  const withSoftware: DeviceView[] = [
    ...cpuOnly,
    { id: 'webgpu0', kind: 'webgpu', memoryBytes: 8e9, peakFlops: {}, software: true },
  ];
  assert.equal(selectPlacement(rules, 'training', undefined, withSoftware).device, undefined);
});

void test('job store: commits fenced by attempt (exactly once), requeue after a crash, idempotency', () => {
  const dir = tempDir();
  try {
    const db = openDatabase(dir, 'normal');
    const store = new JobStore(db);
    const base = {
      tenantId: 't',
      type: 'sleep',
      params: { ms: 1 },
      priority: 0,
      jobClass: 'latency',
      memBytes: 0,
    };
    const [a, dup, other] = store.insertMany([
      { ...base, idempotencyKey: 'k' },
      { ...base, idempotencyKey: 'k' },
      { ...base, params: { ms: 2 }, idempotencyKey: 'k' },
    ]);
    assert.ok(a?.ok && a.created);
    assert.ok(dup?.ok && !dup.created && dup.job.id === a.job.id);
    assert.ok(other && !other.ok && other.error.code === 'TANDEM_ERR_CONFLICT');
    const id = a.job.id;
    const first = store.claim(id, 'cpu')!;
    assert.equal(first.attempt, 1);
    assert.equal(store.requeueRunning(), 1, 'a crash leaves it running; start re-queues it');
    const second = store.claim(id, 'cpu')!;
    assert.equal(second.attempt, 2);
    assert.equal(
      store.finish(id, 1, { state: 'succeeded', result: 'stale' }),
      false,
      'the old attempt cannot commit',
    );
    assert.equal(store.finish(id, 2, { state: 'succeeded', result: { v: 1 } }), true);
    assert.equal(store.finish(id, 2, { state: 'failed' }), false, 'a result is committed once');
    assert.deepEqual(store.get(id)!.result, { v: 1 });
    db.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

void test('job store under full durability: progress is written without its own fsync, every other commit keeps it', () => {
  const dir = tempDir();
  try {
    const db = openDatabase(dir, 'full');
    const store = new JobStore(db);
    const job = { tenantId: 't', type: 'sleep', params: {}, priority: 0, jobClass: 'latency', memBytes: 0 };
    const [a] = store.insertMany([{ ...job, idempotencyKey: null }]);
    assert.ok(a?.ok);
    const run = store.claim(a.job.id, 'cpu')!;
    assert.equal(store.setProgress(a.job.id, run.attempt, 0.5, 'half'), true);
    assert.equal(store.setProgress(a.job.id, run.attempt + 1, 0.7, 'stale'), false, 'fenced by attempt');
    assert.equal(db.pragma('synchronous', { simple: true }), 2, 'back to FULL for the next commits');
    assert.equal(store.get(a.job.id)!.progress, 0.5);
    db.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

void test('API keys are stored as salted hashes and verified; revoked keys stop working', () => {
  const dir = tempDir();
  try {
    const db = openDatabase(dir, 'normal');
    const tenants = new TenantStore(db, DEFAULT_CONFIG.quotas);
    const created = tenants.bootstrapAdmin()!;
    assert.equal(tenants.bootstrapAdmin(), null, 'only once');
    const secret = created.key.slice('tdm_'.length + 16 + 1);
    assert.equal(secret.length, 32);
    const rows = db.prepare('SELECT * FROM api_keys').all() as { hash: Buffer; salt: Buffer }[];
    assert.equal(rows.length, 1);
    assert.ok(!JSON.stringify(rows).includes(secret));
    assert.equal(rows[0]!.hash.length, 32);
    assert.equal(tenants.authenticate(created.key)?.role, 'admin');
    assert.equal(
      tenants.authenticate(created.key.slice(0, -1) + (created.key.endsWith('A') ? 'B' : 'A')),
      null,
    );
    assert.ok(tenants.revokeKey(created.keyId));
    assert.equal(tenants.authenticate(created.key), null);
    db.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

void test('config: parsed once from env and flags, bad values rejected with TANDEM_ERR_CONFIG', () => {
  const c = loadServiceConfig(
    { TANDEM_PORT: '9000', TANDEM_BACKENDS: 'none', TANDEM_HW_RULES: 'latency=cpu!' },
    { maxRunningJobs: 3 },
  );
  assert.equal(c.port, 9000);
  assert.equal(c.runtime.enabled, false);
  assert.equal(c.maxRunningJobs, 3);
  assert.deepEqual(c.hardwareRules, [{ jobClass: 'latency', deviceClass: 'cpu', strict: true }]);
  assert.throws(() => loadServiceConfig({ TANDEM_PORT: 'x' }), /TANDEM_ERR_CONFIG/);
  assert.throws(() => loadServiceConfig({ TANDEM_DURABILITY: 'maybe' }), /TANDEM_ERR_CONFIG/);
});
