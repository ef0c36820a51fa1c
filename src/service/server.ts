/**
 * `tandem serve`: opens the runtime on the local devices, starts the service on its port, prints how
 * to get the first admin key, and shuts down cleanly on SIGINT/SIGTERM (running jobs are left to be
 * re-queued by the next start, never half-committed). Under the CLI's supervisor it also stops itself
 * for a relaunch when a device is lost for the rest of the process (`restart`, device-loss.ts).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describeBackend } from '../runtime/backends.js';
import type { ServiceConfig } from './config.js';
import { listenMetrics, type MetricsListener } from './obs/metrics-server.js';
import { createServer, type AddressInfo } from 'node:net';
import { TandemError } from '../core/errors.js';
import type { OpenedRuntime } from './parts.js';
import { createService, type Service, type ServiceRuntimeHost } from './service.js';
import { lockDataDir } from './store/data-dir-lock.js';

/** EADDRINUSE (and EACCES for a privileged port) said plainly, with a stable code. */
function portError(e: unknown, host: string, port: number): unknown {
  const code = (e as NodeJS.ErrnoException | null)?.code;
  if (code === 'EADDRINUSE')
    return new TandemError(
      'TANDEM_ERR_PORT_IN_USE',
      `port ${port} on ${host} is already in use by another process; pick another with --port or TANDEM_PORT (0 = any free port)`,
      { host, port },
    );
  if (code === 'EACCES')
    return new TandemError(
      'TANDEM_ERR_PORT_IN_USE',
      `not allowed to listen on ${host}:${port} (a privileged port?)`,
      {
        host,
        port,
      },
    );
  return e;
}

/** Binds and releases the port once, so a taken port is reported before devices are opened. */
async function assertPortFree(host: string, port: number): Promise<void> {
  if (port === 0) return;
  await new Promise<void>((resolve, reject) => {
    const probe = createServer();
    probe.once('error', (e) => reject(portError(e, host, port)));
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve()));
  });
}

/** Backends' warnings from `warn` up; drivers' and Dawn's start-up chatter only at `debug`. */
function runtimeLogging(level: ServiceConfig['logLevel']): {
  log: (m: string) => void;
  debug: (m: string) => void;
} {
  return {
    log: (m) => {
      if (!['silent', 'error'].includes(level)) process.stderr.write(`[tandem] ${m}\n`);
    },
    debug: (m) => {
      if (level === 'debug') process.stderr.write(`[tandem debug] ${m}\n`);
    },
  };
}

export async function openRuntime(
  config: ServiceConfig,
): Promise<{ rt: ServiceRuntimeHost | null; reason: string }> {
  if (!config.runtime.enabled) return { rt: null, reason: 'runtime disabled by configuration' };
  try {
    // Imported here so that a service without devices (or still starting) does not pay for it.
    const { Runtime } = await import('../runtime/runtime.js');
    const rt = await Runtime.create({
      backends: config.runtime.backends,
      calibrate: config.runtime.calibrate,
      cacheDir: config.runtime.cacheDir,
      // One BLAS thread per CPU worker: with cpuThreads = cores - 1 the event loop keeps a core of its
      // own, so health checks and submissions are answered in milliseconds during long CPU kernels.
      options: { cpu: { threads: config.runtime.cpuThreads, blasThreads: 1 } },
      ...runtimeLogging(config.logLevel),
    });
    // One line per backend: its devices, or why it is unavailable (as `tandem devices` says).
    if (!['silent', 'error'].includes(config.logLevel))
      for (const b of rt.backends) process.stderr.write(`[tandem] ${describeBackend(b)}\n`);
    if (rt.devices.length === 0) {
      const why = rt.backends.map((b) => `${b.kind}: ${b.reason ?? 'no device'}`).join('; ');
      return { rt, reason: `no device opened (${why})` };
    }
    return { rt, reason: '' };
  } catch (e) {
    return { rt: null, reason: e instanceof Error ? e.message : String(e) };
  }
}

export interface RunningServer {
  readonly service: Service;
  readonly url: string;
  /** The keyless metrics listener's URL when `metricsListen` is set, else null. */
  readonly metricsUrl: string | null;
  stop(): Promise<void>;
  /**
   * With `restartOnDeviceLoss`: resolves with why once the server has drained after a device loss and
   * stopped; the process should then exit for its supervisor to relaunch it. Never resolves otherwise.
   */
  readonly restart: Promise<string>;
}

export interface StartOptions {
  /** Set when a supervisor relaunches this process (see CreateServiceOptions.restartOnDeviceLoss). */
  readonly restartOnDeviceLoss?: boolean;
  /** The supervisor this server dies with, recorded in the data-dir lock (see data-dir-lock.ts). */
  readonly supervisorPid?: number | null;
}

export async function startServer(
  config: ServiceConfig,
  out: (line: string) => void,
  opts: StartOptions = {},
): Promise<RunningServer> {
  const t0 = performance.now();
  // Refused before anything is opened: a data dir another server holds, a port another process holds.
  const lock = await lockDataDir(config.dataDir, config.host, config.port === 0 ? null : config.port, {
    supervisorPid: opts.supervisorPid ?? null,
  });
  let service: Service;
  let opening: Promise<OpenedRuntime>;
  try {
    await assertPortFree(config.host, config.port);
    // Serve first, open devices in the background: a restart answers within a second or two even when
    // the devices take longer to start; queued jobs dispatch once the runtime is ready.
    opening = openRuntime(config);
    service = await createService(config, {
      runtime: opening,
      ownsRuntime: true,
      restartOnDeviceLoss: opts.restartOnDeviceLoss === true,
    });
  } catch (e) {
    lock.release();
    throw e;
  }
  let address: string;
  try {
    address = await service.app.listen({ host: config.host, port: config.port });
  } catch (e) {
    // Taken between the check and now: close what was opened, or its handles keep the process alive.
    await service.close().catch(() => undefined);
    lock.release();
    throw portError(e, config.host, config.port);
  }
  lock.setPort((service.app.server.address() as AddressInfo).port);
  const url = address.replace('[::1]', 'localhost');
  let metricsListener: MetricsListener | null = null;
  if (config.metricsListen !== null) {
    try {
      metricsListener = await listenMetrics(service.metrics, config.metricsListen);
    } catch (e) {
      await service.close().catch(() => undefined);
      throw e;
    }
    out(`metrics (no key; tenant labels included) on ${metricsListener.url}`);
  }
  const ms = (performance.now() - t0).toFixed(0);
  out(
    `tandem service on ${url} (dashboard ${config.webDir ? `${url}/` : 'not configured'}, API ${url}/openapi.json) in ${ms} ms`,
  );
  out(`data dir ${config.dataDir}`);
  void opening.then(({ reason }) => {
    const ids = service.devices().map((d) => d.id);
    out(`devices: ${ids.join(', ') || 'none'}${reason ? ` (${reason})` : ''}`);
  });
  if (service.recovered.queued > 0 || service.recovered.requeued > 0)
    out(
      `recovered ${service.recovered.queued} queued jobs (${service.recovered.requeued} were running and were re-queued)`,
    );
  if (service.bootstrapKey) {
    const file = join(config.dataDir, 'admin-key.txt');
    writeFileSync(file, `${service.bootstrapKey.key}\n`, { mode: 0o600 });
    out(`first start: admin API key (shown once, also in ${file}):`);
    out(`  ${service.bootstrapKey.key}`);
    // Pasted into a shell, every `tandem` client command (and the README's curl lines) talks to this server.
    out(`  export TANDEM_URL=${url} TANDEM_KEY=${service.bootstrapKey.key}`);
  } else {
    out(
      `admin key: from the first start (${join(config.dataDir, 'admin-key.txt')}), or create one with \`tandem keys create\``,
    );
  }
  let stopping: Promise<void> | null = null;
  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
      await metricsListener?.close();
      await service.close();
    })().finally(() => lock.release()));
  const restart = service.restartRequested.then(async (why) => {
    await stop();
    return why;
  });
  return { service, url, metricsUrl: metricsListener?.url ?? null, stop, restart };
}
