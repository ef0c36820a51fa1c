/**
 * `tandem agent --queue redis://host:6379 [--pg postgres://...]`: a node agent. Opens the local devices,
 * advertises them (heartbeat in Redis), takes the jobs that fit them and commits outcomes to the job
 * store. SIGTERM/SIGINT finish running jobs (up to --grace-ms) and leave; kill -9 leaves the jobs to be
 * detected stalled and re-run elsewhere.
 */
import { freemem, hostname } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Agent } from '../agent/agent.js';
import { RedisAgentRegistry, deviceClassOf, type AgentDevice } from '../service/queue/heartbeat.js';
import { TandemError } from '../core/errors.js';
import { Runtime } from '../runtime/runtime.js';
import { registerBuiltinJobTypes } from '../service/jobs/builtin.js';
import { JobTypeRegistry } from '../service/jobs/registry.js';
import { DeviceActivity } from '../service/obs/device-activity.js';
import { BullQueue } from '../service/queue/bullmq-queue.js';
import { openQueue } from '../service/queue/open.js';
import { PgJobStore } from '../service/store/pg-store.js';
import { LocalAutoscaler } from '../service/autoscale/local.js';
import { DEFAULT_POLICY, ScaleSignal } from '../service/autoscale/signal.js';
import { loadServiceConfig } from '../service/config.js';
import { pgClusterLoadSource } from '../service/queue/cluster-backlog.js';
import { buildControlPlane, parseApiKeys, parseTenantWeights } from '../service/queue/control-plane.js';
import { PgAdvisoryLock } from '../service/queue/leader-lock.js';

/** `tandem agent` options, parsed and range-checked by commander (program-service.ts). */
export interface AgentOptions {
  readonly queue: string;
  readonly pg?: string;
  readonly name?: string;
  /** Comma-separated kinds, or none. */
  readonly backends: string;
  readonly concurrency: number;
  readonly cpuThreads: number;
  readonly prefix: string;
  readonly graceMs: number;
}

export async function agentCommand(opts: AgentOptions): Promise<number> {
  const queueUrl = opts.queue;
  const name = opts.name ?? `${hostname()}-${process.pid}`;
  const backends = opts.backends.split(',').filter(Boolean);
  const { concurrency, graceMs, prefix } = opts;

  // Unreachable Redis/PostgreSQL fail here, naming the URL, before any device is opened.
  const queue = await openQueue(queueUrl, { prefix });
  const store = opts.pg !== undefined ? await PgJobStore.open(opts.pg) : null;
  const registry = new JobTypeRegistry();
  await registerBuiltinJobTypes(registry);
  const activity = new DeviceActivity();
  const rt = backends.includes('none')
    ? null
    : await Runtime.create({
        backends,
        calibrate: false,
        options: { cpu: { threads: opts.cpuThreads } },
      });
  rt?.addObserver(activity);
  const devices = (): AgentDevice[] => {
    if (!rt) {
      // No runtime: a plain CPU slot for jobs that need no device (sleep, service overhead).
      const mem = freemem();
      return [
        { id: 'host', kind: 'cpu', deviceClass: 'cpu', memoryBytes: mem, freeBytes: mem, utilization: 0 },
      ];
    }
    const usage = rt.memoryUsage();
    return rt.devices.map((d) => {
      const used = usage.find((u) => u.node === d.node.name)?.usedBytes ?? 0;
      return {
        id: d.info.id,
        kind: d.info.kind,
        deviceClass: deviceClassOf(d.info.kind),
        memoryBytes: d.info.memoryBytes,
        freeBytes: Math.max(0, d.info.memoryBytes - used),
        utilization: activity.utilization(d.info.id),
      };
    });
  };
  const deviceClasses = [...new Set(devices().map((d) => d.deviceClass))];
  if (deviceClasses.length === 0)
    throw new TandemError('TANDEM_ERR_DEVICE_UNAVAILABLE', 'no device opened; nothing to offer the queue', {
      backends: rt?.backends.map((b) => ({ kind: b.kind, reason: b.reason })) ?? [],
    });
  const heartbeat = queue instanceof BullQueue ? new RedisAgentRegistry(queue.redis, prefix) : null;
  const agent = new Agent({
    name,
    queue,
    store,
    registry,
    rt,
    devices,
    deviceClasses,
    concurrency,
    heartbeat,
    heartbeatMs: 1000,
    log: (m) => process.stderr.write(`[agent ${name}] ${m}\n`),
    deadlineGraceMs: loadServiceConfig(process.env).deadlineGraceMs,
  });
  await agent.start();
  process.stdout.write(
    `agent ${name} ready: classes ${deviceClasses.join(',')}; devices ${devices()
      .map((d) => d.id)
      .join(',')}; queue ${queue.kind}; store ${store ? 'postgresql' : 'none (queue-only)'}\n`,
  );
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  });
  await agent.stop(graceMs);
  await queue.close();
  await store?.close();
  if (rt) await rt.close();
  process.stdout.write(`agent ${name} stopped after ${agent.jobsDone} jobs (${agent.reruns} re-runs)\n`);
  return 0;
}

/** `tandem autoscale` options, parsed and range-checked by commander (program-service.ts). */
export interface AutoscaleOptions {
  readonly queue: string;
  readonly pg?: string;
  readonly min: number;
  readonly max: number;
  readonly class: string;
  readonly jobsPerAgent: number;
  readonly idleMs: number;
  readonly prefix: string;
  readonly agentArgs?: string;
}

/** `tandem autoscale`: starts and stops agent processes on this machine from the scaling signal. */
export async function autoscaleCommand(opts: AutoscaleOptions): Promise<number> {
  const queueUrl = opts.queue;
  if (!/^rediss?:/.test(queueUrl))
    throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', `--queue must be a redis:// URL, got ${queueUrl}`);
  const { prefix, min, max } = opts;
  if (min > max) throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', `--min ${min} is above --max ${max}`);
  const policy = { ...DEFAULT_POLICY, min, max, jobsPerAgent: opts.jobsPerAgent, idleMs: opts.idleMs };
  const queue = await BullQueue.open({ url: queueUrl, prefix });
  const main = fileURLToPath(new URL('./main.js', import.meta.url));
  const extra = opts.agentArgs?.split(/\s+/).filter(Boolean) ?? [];
  const scaler = new LocalAutoscaler({
    queue,
    agents: new RedisAgentRegistry(queue.redis, prefix),
    signal: new ScaleSignal(policy),
    deviceClass: opts.class,
    agentCommand: [
      process.execPath,
      main,
      'agent',
      '--queue',
      queueUrl,
      '--prefix',
      prefix,
      ...(opts.pg !== undefined ? ['--pg', opts.pg] : []),
      ...extra,
    ],
    tickMs: 500,
    onEvent: (e) => process.stdout.write(`${new Date(e.at).toISOString()} ${JSON.stringify(e)}\n`),
  });
  scaler.start();
  process.stdout.write(`autoscaler ready: ${min}..${max} agents, ${policy.jobsPerAgent} jobs per agent\n`);
  await new Promise<void>((resolve) => {
    process.once('SIGTERM', () => resolve());
    process.once('SIGINT', () => resolve());
  });
  await scaler.stop();
  await queue.close();
  return 0;
}

/**
 * `tandem serve --queue redis://... --pg postgres://...`: the scaled-out control plane (`serve` hands
 * over here when --queue is given). API keys come from TANDEM_API_KEYS ("tenant=key,...").
 */
/** The `tandem serve` options the control plane reads (serve-command.ts hands its own over). */
export interface ControlPlaneOptions {
  readonly json?: boolean;
  readonly host?: string;
  readonly port?: number;
  readonly queue?: string;
  readonly pg?: string;
  readonly prefix?: string;
  readonly reconcileMs?: number;
}

export async function controlPlaneCommand(opts: ControlPlaneOptions): Promise<number> {
  const queueUrl = opts.queue;
  const pgUrl = opts.pg;
  if (typeof queueUrl !== 'string' || !/^rediss?:/.test(queueUrl) || typeof pgUrl !== 'string')
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      'scaled-out serve needs --queue redis://... and --pg postgres://...',
    );
  const keysText = process.env['TANDEM_API_KEYS'];
  if (!keysText)
    throw new TandemError(
      'TANDEM_ERR_CONFIG',
      'TANDEM_API_KEYS ("tenant=key,...") is required in scaled-out mode',
    );
  const config = loadServiceConfig(process.env, {
    ...(opts.host !== undefined ? { host: opts.host } : {}),
    ...(opts.port !== undefined ? { port: opts.port } : {}),
  });
  const prefix = opts.prefix ?? 'tandem';
  const queue = await BullQueue.open({ url: queueUrl, prefix });
  const store = await PgJobStore.open(pgUrl);
  const registry = new JobTypeRegistry();
  await registerBuiltinJobTypes(registry);
  const cp = await buildControlPlane({
    store,
    queue,
    registry,
    prefix,
    rules: config.hardwareRules,
    keys: parseApiKeys(keysText),
    weights: parseTenantWeights(process.env['TANDEM_TENANT_WEIGHTS'] ?? ''),
    reconcileMs: opts.reconcileMs ?? 30_000,
    bodyLimitBytes: config.bodyLimitBytes,
    load: pgClusterLoadSource(store),
    lock: new PgAdvisoryLock(pgUrl, prefix),
    config: {
      rateLimitPerSec: config.rateLimitPerSec,
      rateLimitBurst: config.rateLimitBurst,
      quotas: config.quotas,
      shed: config.shed,
      defaultJobTimeoutSeconds: config.defaultJobTimeoutSeconds,
      deadlineGraceMs: config.deadlineGraceMs,
    },
  });
  const url = await cp.app.listen({ host: config.host, port: config.port });
  const line = {
    url,
    mode: 'scaled-out',
    queue: queueUrl.replace(/:[^:@/]*@/, ':***@'),
    store: 'postgresql',
  };
  process.stdout.write(
    opts.json
      ? `${JSON.stringify(line)}\n`
      : `tandem control plane on ${url} (queue ${line.queue}, PostgreSQL store)\n`,
  );
  await new Promise<void>((resolve) => {
    process.once('SIGTERM', () => resolve());
    process.once('SIGINT', () => resolve());
  });
  await cp.close();
  await queue.close();
  await store.close();
  return 0;
}
