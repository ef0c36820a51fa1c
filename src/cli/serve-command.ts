/**
 * `tandem serve`: the service in this process. Started by the supervisor (supervisor.ts) it is the
 * supervised child: it reports its port, stops when the supervisor says so, dies with the supervisor,
 * and exits with RESTART_EXIT_CODE to be relaunched when a device is lost for the rest of the process.
 */
import { fileURLToPath } from 'node:url';
import type { AddressInfo } from 'node:net';
import { loadServiceConfig, type ConfigOverrides } from '../service/config.js';
import {
  RESTART_EXIT_CODE,
  RESTARTS_ENV,
  supervisedChild,
  type ChildMessage,
  type StopMessage,
} from './supervisor.js';

/** After a stop, exit at the latest this much later even if some handle would keep the process alive. */
const EXIT_GRACE_MS = 3000;

function tell(msg: ChildMessage, then?: () => void): void {
  if (process.connected && process.send) process.send(msg, () => then?.());
  else then?.();
}

function isStopMessage(m: unknown): m is StopMessage {
  return typeof m === 'object' && m !== null && (m as { type?: unknown }).type === 'tandem:stop';
}

/** The options of `tandem serve`, parsed and range-checked by commander (program-service.ts). */
export interface ServeOptions {
  readonly json?: boolean;
  readonly port?: number;
  readonly host?: string;
  readonly dataDir?: string;
  readonly webDir?: string;
  readonly backends?: string;
  readonly calibrate: boolean;
  readonly maxRunning?: number;
  /** host:port of a keyless listener for Prometheus (GET /metrics only); TANDEM_METRICS_ADDR too. */
  readonly metricsListen?: string;
  /** Scaled-out control plane (agent-commands.ts) when set. */
  readonly queue?: string;
  readonly pg?: string;
  readonly prefix?: string;
  readonly reconcileMs?: number;
}

export async function serveCommand(opts: ServeOptions): Promise<number> {
  // Scaled-out mode (issue 8): with --queue the control plane runs over Redis + PostgreSQL instead.
  if (opts.queue !== undefined) return (await import('./agent-commands.js')).controlPlaneCommand(opts);
  const supervised = supervisedChild();
  // A stop asked for by the supervisor: handled once the server runs (or at once if asked before).
  let stopAsked: string | null = null;
  let onStopAsked: ((signal: string) => void) | null = null;
  if (supervised) {
    // The supervisor gone (even by kill -9) means the service was stopped: go at once, as it did,
    // rather than serve on unsupervised beside a new instance on the same data dir.
    const orphaned = (): void => void process.kill(process.pid, 'SIGKILL');
    process.once('disconnect', orphaned);
    // Node reads the channel (and so notices it closing) only while something listens for messages.
    process.on('message', (m: unknown) => {
      if (!isStopMessage(m)) return;
      stopAsked = m.signal;
      onStopAsked?.(m.signal);
    });
    // ... but the channel alone must not keep this process alive: it ends when the server stops or
    // fails to start (bad arguments), with the code the supervisor then reads.
    process.channel?.unref();
    if (!process.connected) orphaned();
  }
  const overrides: ConfigOverrides = {
    webDir: opts.webDir ?? fileURLToPath(new URL('../../../web/dist', import.meta.url)),
  };
  if (opts.port !== undefined) overrides.port = opts.port;
  if (opts.host !== undefined) overrides.host = opts.host;
  if (opts.dataDir !== undefined) overrides.dataDir = opts.dataDir;
  if (opts.maxRunning !== undefined) overrides.maxRunningJobs = opts.maxRunning;
  const env: Record<string, string | undefined> = { ...process.env };
  if (opts.backends !== undefined) env['TANDEM_BACKENDS'] = opts.backends;
  if (!opts.calibrate) env['TANDEM_CALIBRATE'] = '0';
  if (opts.metricsListen !== undefined) env['TANDEM_METRICS_ADDR'] = opts.metricsListen;
  const config = loadServiceConfig(env, overrides);
  const { startServer } = await import('../service/server.js');
  const json = opts.json === true;
  const server = await startServer(
    config,
    (line) => {
      if (!json) process.stdout.write(`${line}\n`);
    },
    { restartOnDeviceLoss: supervised, supervisorPid: supervised ? process.ppid : null },
  );
  // One line, so that a supervising process can read it as soon as the service answers. Under the
  // supervisor a relaunched server prints it again (same url; `restarts` counts the relaunches).
  // The supervisor hears "ready" before anyone can read the line: a caller that kills this process
  // as soon as it has the line must find it treated as a server that ran (and so relaunched).
  if (supervised)
    await new Promise<void>((resolve) =>
      tell(
        { type: 'tandem:ready', port: (server.service.app.server.address() as AddressInfo).port },
        resolve,
      ),
    );
  if (json)
    process.stdout.write(
      `${JSON.stringify({
        url: server.url,
        dataDir: config.dataDir,
        adminKey: server.service.bootstrapKey?.key ?? null,
        pid: process.pid,
        restarts: Number(process.env[RESTARTS_ENV] ?? 0),
        ...(server.metricsUrl ? { metricsUrl: server.metricsUrl } : {}),
      })}\n`,
    );
  const code = await new Promise<number>((resolve) => {
    let stopping = false;
    const onSignal = (sig: string): void => {
      if (stopping) return;
      stopping = true;
      process.stderr.write(`tandem: ${sig}, stopping (running jobs will resume at the next start)\n`);
      server.stop().then(
        () => resolve(0),
        () => resolve(0),
      );
    };
    process.once('SIGINT', () => onSignal('SIGINT'));
    process.once('SIGTERM', () => onSignal('SIGTERM'));
    onStopAsked = onSignal;
    if (stopAsked !== null) onSignal(stopAsked);
    server.restart.then(
      (why) => {
        process.stderr.write(`tandem: stopped for a relaunch: ${why}\n`);
        const hungKernel = server.service.kernelHung;
        tell({ type: 'tandem:restart', reason: why, ...(hungKernel ? { hungKernel } : {}) }, () =>
          resolve(RESTART_EXIT_CODE),
        );
      },
      (e: unknown) => {
        process.stderr.write(`tandem: stopping for a relaunch failed: ${String(e)}\n`);
        resolve(RESTART_EXIT_CODE);
      },
    );
  });
  // A stopped server holds nothing worth waiting for; the supervisor waits for this exit.
  if (supervised) process.exit(code);
  setTimeout(() => process.exit(code), EXIT_GRACE_MS).unref();
  return code;
}
