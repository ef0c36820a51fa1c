/**
 * deploy/*.yaml against Kubernetes' schemas: built-in kinds with kubernetes-models' validators (generated
 * from the Kubernetes OpenAPI spec), ServiceMonitor and ScaledObject with the validators generated from
 * their CRDs' schemas (@kubernetes-models/prometheus-operator, @kubernetes-models/keda). Then structural
 * checks the schemas cannot express: agents request nvidia.com/gpu, selectors and targets point at
 * objects that exist, the autoscalers read the gauge the control plane exports.
 */
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parseAllDocuments } from 'yaml';

type Doc = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
} & Record<string, unknown>;

const dir = join(process.cwd(), 'deploy');
const docs: { file: string; doc: Doc }[] = [];
for (const f of readdirSync(dir)
  .filter((x) => x.endsWith('.yaml'))
  .sort())
  for (const d of parseAllDocuments(readFileSync(join(dir, f), 'utf8'))) {
    if (d.errors.length) throw new Error(`${f}: ${d.errors[0]!.message}`);
    docs.push({ file: f, doc: d.toJS() as Doc });
  }

const CRD_PACKAGES: Record<string, string> = {
  'monitoring.coreos.com': '@kubernetes-models/prometheus-operator',
  'keda.sh': '@kubernetes-models/keda',
};

async function modelFor(apiVersion: string, kind: string): Promise<new (d: unknown) => { validate(): void }> {
  const [group, version] = apiVersion.includes('/') ? apiVersion.split('/') : ['', apiVersion];
  const spec = group
    ? CRD_PACKAGES[group!]
      ? `${CRD_PACKAGES[group!]}/${group}/${version}`
      : `kubernetes-models/${group}/${version}`
    : `kubernetes-models/${version}`;
  const mod = (await import(spec)) as Record<string, new (d: unknown) => { validate(): void }>;
  const cls = mod[kind];
  if (!cls) throw new Error(`no model for ${apiVersion} ${kind} in ${spec}`);
  return cls;
}

const find = (kind: string, name: string) =>
  docs.find((d) => d.doc.kind === kind && d.doc.metadata.name === name)?.doc;
const get = (o: unknown, path: string): unknown =>
  path
    .split('.')
    .reduce<unknown>(
      (v, k) => (v && typeof v === 'object' ? (v as Record<string, unknown>)[k] : undefined),
      o,
    );

describe('deploy/ manifests', () => {
  it('has every piece: control plane, backends, GPU agents, CPU agents, ServiceMonitor, HPA, KEDA', () => {
    const kinds = docs.map((d) => `${d.doc.kind}/${d.doc.metadata.name}`);
    for (const k of [
      'Deployment/tandem-control-plane',
      'Service/tandem-control-plane',
      'Service/tandem-redis',
      'Service/tandem-postgres',
      'Secret/tandem-backends',
      'Deployment/tandem-agent-gpu',
      'DaemonSet/tandem-agent-cpu',
      'ServiceMonitor/tandem-control-plane',
      'HorizontalPodAutoscaler/tandem-agent-gpu',
      'ScaledObject/tandem-agent-gpu',
    ])
      assert.ok(kinds.includes(k), `missing ${k}`);
  });

  for (const { file, doc } of docs)
    it(`${file}: ${doc.kind} ${doc.metadata.name} is valid against its schema`, async () => {
      const Model = await modelFor(doc.apiVersion, doc.kind);
      assert.doesNotThrow(() => new Model(doc).validate());
    });

  it('rejects a broken manifest (the validation can fail)', async () => {
    const Model = await modelFor('apps/v1', 'Deployment');
    const bad = structuredClone(find('Deployment', 'tandem-agent-gpu'));
    (bad as unknown as { spec: { replicas: unknown } }).spec.replicas = 'two';
    assert.throws(() => new Model(bad).validate());
    const SO = await modelFor('keda.sh/v1alpha1', 'ScaledObject');
    const badSo = structuredClone(find('ScaledObject', 'tandem-agent-gpu'));
    delete (badSo as unknown as { spec: { scaleTargetRef?: unknown } }).spec.scaleTargetRef;
    assert.throws(() => new SO(badSo).validate());
  });

  it('wires the pieces together (structural checks)', () => {
    const gpu = find('Deployment', 'tandem-agent-gpu')!;
    const c = (get(gpu, 'spec.template.spec.containers') as Record<string, unknown>[])[0]!;
    assert.equal(get(c, 'resources.limits')?.['nvidia.com/gpu' as never], 1);
    assert.ok((c['args'] as string[]).slice(0, 3).join(' ') === 'agent --queue $(TANDEM_QUEUE_URL)');
    const cp = find('Deployment', 'tandem-control-plane')!;
    const cpc = (get(cp, 'spec.template.spec.containers') as Record<string, unknown>[])[0]!;
    assert.equal(get(cpc, 'readinessProbe.httpGet.path'), '/healthz');
    const svc = find('Service', 'tandem-control-plane')!;
    const sm = find('ServiceMonitor', 'tandem-control-plane')!;
    assert.deepEqual(get(sm, 'spec.selector.matchLabels'), svc.metadata.labels);
    assert.equal(get(sm, 'spec.endpoints.0.path'), '/metrics');
    const hpa = find('HorizontalPodAutoscaler', 'tandem-agent-gpu')!;
    assert.equal(get(hpa, 'spec.scaleTargetRef.name'), gpu.metadata.name);
    assert.equal(
      (get(hpa, 'spec.metrics') as unknown[]).map((m) => get(m, 'external.metric.name'))[0],
      'tandem_autoscale_desired_agents',
    );
    const so = find('ScaledObject', 'tandem-agent-gpu')!;
    assert.equal(get(so, 'spec.scaleTargetRef.name'), gpu.metadata.name);
    assert.equal(get(so, 'spec.minReplicaCount'), 0);
    assert.match(
      String((get(so, 'spec.triggers') as unknown[]).map((t) => get(t, 'metadata.query'))[0]),
      /tandem_autoscale_desired_agents\{device_class="gpu"\}/,
    );
    for (const { doc } of docs)
      if (doc.kind !== 'Namespace')
        assert.equal(doc.metadata.namespace, 'tandem', `${doc.kind} ${doc.metadata.name}`);
  });
});
