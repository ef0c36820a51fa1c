/**
 * A registration's batch limit is capped by its model kind's limit when the version is registered, not
 * only when it loads: the model list (and `tandem models list`) showed the requested ≤64 for an ONNX
 * model until it loaded and ≤16 after, though the lane never formed a batch over 16.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { mlpFactory } from '../../../src/service/serving/classifier-model.js';
import { gptModelFactory } from '../../../src/service/serving/models/gpt.js';
import { onnxFactory } from '../../../src/service/serving/models/onnx.js';
import type { ModelFactory } from '../../../src/service/serving/model.js';
import { newRegistration, type RegisterRequest } from '../../../src/service/serving/registration.js';
import type { Tenant } from '../../../src/service/auth/tenants.js';

const caller: Tenant = {
  id: 't1',
  name: 'team',
  role: 'user',
  weight: 1,
  maxConcurrentJobs: 4,
  maxDeviceMemoryBytes: 1 << 30,
  maxQueuedJobs: 100,
  maxTimeoutSeconds: 3600,
  createdAt: 0,
};

const registered = (factory: ModelFactory, r: Partial<RegisterRequest>) =>
  newRegistration(caller, { name: 'm', kind: factory.kind, ...r }, 1, factory, null).batching;

describe('serving: the batch limit at registration', () => {
  it("caps an ONNX model's requested batch by its config's maxBatchSize (default 16)", () => {
    assert.equal(registered(onnxFactory, { batching: { maxBatchSize: 64 } }).maxBatchSize, 16);
    assert.equal(
      registered(onnxFactory, { config: { maxBatchSize: 32 }, batching: { maxBatchSize: 64 } }).maxBatchSize,
      32,
    );
    // A smaller request stands.
    assert.equal(registered(onnxFactory, { batching: { maxBatchSize: 4 } }).maxBatchSize, 4);
  });

  it('leaves an invalid config to the load, which reports it', () => {
    const b = registered(onnxFactory, { config: { maxBatchSize: 'many' }, batching: { maxBatchSize: 64 } });
    assert.equal(b.maxBatchSize, 64);
  });

  it('caps by the kind for classifiers and GPT, keeping the other settings', () => {
    const b = registered(mlpFactory, { batching: { maxBatchSize: 5000, maxQueueDelayUs: 250 } });
    assert.equal(b.maxBatchSize, 1024);
    assert.equal(b.maxQueueDelayUs, 250);
    const g = registered(gptModelFactory, { batching: { maxBatchSize: 100_000 } });
    assert.ok(g.maxBatchSize < 100_000 && g.maxBatchSize >= 1, `gpt cap ${g.maxBatchSize}`);
  });
});
