/**
 * The model repository of the interactive lane (docs/serving.md): model versions registered from a
 * spec (built in from the config's seed, from a finished train job's last checkpoint, or from an
 * uploaded weights file), each with its placement rule and its dynamic batcher. Registrations are kept
 * in <data dir>/models/index.json and come back after a restart; a version is loaded onto the runtime
 * when registered, and after a restart on its first use. A version that fails to load (a bad weights
 * file) is marked failed with its error and the others keep serving. Requests write nothing here.
 * A version's state and view are in model-version.ts, what a registration takes in registration.ts,
 * and loading one onto the runtime in version-loader.ts; this file keeps the table of versions.
 */
import type { Registry } from 'prom-client';
import { TandemError } from '../../core/errors.js';
import type { Observer } from '../../obs/observer.js';
import type { Tenant } from '../auth/tenants.js';
import type { ServiceRuntime } from '../jobs/job-type.js';
import type { JobRecord } from '../store/job-store.js';
import { ModelFiles, type Registration } from './model-files.js';
import type { ModelFactory } from './model.js';
import { HotLoop } from './hot-loop.js';
import { ServingMetrics } from './metrics.js';
import {
  ModelVersion,
  pickVersion,
  versionView,
  type VersionState,
  type VersionView,
} from './model-version.js';
import { JobDeviceUse } from './placement.js';
import { newRegistration, takeWeights, type RegisterRequest } from './registration.js';
import { loadVersion } from './version-loader.js';

// Moved out by concern; re-exported so importers of repository.js are unchanged.
export { ModelVersion, type VersionState, type VersionView } from './model-version.js';
export type { RegisterRequest } from './registration.js';

/** The runtime as the repository needs it: what models use, plus observers for the placement rule. */
export type RepositoryRuntime = ServiceRuntime & {
  addObserver?(o: Observer): void;
  removeObserver?(o: Observer): void;
};

export interface RepositoryOptions {
  readonly dataDir: string;
  readonly factories: readonly ModelFactory[];
  readonly runtime: () => RepositoryRuntime | null;
  /** A job by id (for registration from a train job's checkpoint). */
  readonly findJob: (id: string) => JobRecord | null;
  /** The service's Prometheus registry: the lane's metrics (metrics.ts) go there. */
  readonly registry?: Registry;
  readonly log?: (level: 'info' | 'warn' | 'error', msg: string) => void;
  /** The lane's hot-loop window in µs (hot-loop.ts; 0: off). */
  readonly spinUs?: number;
}

export class ModelRepository {
  private readonly files: ModelFiles;
  private readonly byName = new Map<string, Map<number, ModelVersion>>();
  private readonly factories: ReadonlyMap<string, ModelFactory>;
  private readonly use = new JobDeviceUse();
  private observed: RepositoryRuntime | null = null;
  /** `name@version` of registrations still loading, so two cannot take the same version. */
  private readonly reserved = new Set<string>();

  readonly metrics: ServingMetrics | null;
  /** Keeps the event loop polling between interactive requests (off unless spinUs > 0). */
  readonly hotLoop: HotLoop;

  constructor(private readonly o: RepositoryOptions) {
    this.metrics = o.registry ? new ServingMetrics(o.registry, () => this.depths()) : null;
    this.hotLoop = new HotLoop(o.spinUs ?? 0);
    this.files = new ModelFiles(o.dataDir);
    this.factories = new Map(o.factories.map((f) => [f.kind, f]));
    let saved: Registration[] = [];
    try {
      saved = this.files.readIndex();
    } catch (e) {
      // A damaged index must not keep the service (and its jobs) from starting: it is set aside.
      const aside = this.files.setAside();
      o.log?.(
        'error',
        `the model index could not be read (${String(e)}); moved to ${aside}, no models loaded`,
      );
    }
    for (const reg of saved) this.versionsOf(reg.name, true).set(reg.version, new ModelVersion(reg));
  }

  get kinds(): readonly ModelFactory[] {
    return [...this.factories.values()];
  }

  get uploads(): ModelFiles {
    return this.files;
  }

  private versionsOf(name: string, create = false): Map<number, ModelVersion> {
    let m = this.byName.get(name);
    if (!m) {
      m = new Map();
      if (create) this.byName.set(name, m);
    }
    return m;
  }

  private runtime(): RepositoryRuntime {
    const rt = this.o.runtime();
    if (!rt || rt.devices.length === 0)
      throw new TandemError('TANDEM_ERR_DEVICE_UNAVAILABLE', 'no runtime is open: models cannot be loaded');
    if (this.observed !== rt) {
      this.observed?.removeObserver?.(this.use);
      rt.addObserver?.(this.use);
      this.observed = rt;
    }
    return rt;
  }

  /** Registers and loads a version; throws (nothing kept) when its weights or config are bad. */
  async register(caller: Tenant, r: RegisterRequest): Promise<VersionView> {
    const factory = this.factories.get(r.kind);
    if (!factory)
      throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', `unknown model kind ${JSON.stringify(r.kind)}`, {
        known: [...this.factories.keys()],
      });
    const versions = this.versionsOf(r.name);
    const owner = [...versions.values()][0]?.reg.owner;
    if (owner !== undefined && owner !== caller.id && caller.role !== 'admin')
      throw new TandemError('TANDEM_ERR_CONFLICT', `model ${r.name} belongs to another tenant`);
    const version = r.version ?? Math.max(0, ...versions.keys()) + 1;
    if (versions.has(version) || this.reserved.has(`${r.name}@${version}`))
      throw new TandemError('TANDEM_ERR_CONFLICT', `model ${r.name} already has version ${version}`, {
        name: r.name,
        version,
      });
    if (r.fromJob !== undefined && r.upload !== undefined)
      throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', 'give fromJob or upload, not both');
    const rt = this.runtime();
    const key = `${r.name}@${version}`;
    this.reserved.add(key);
    try {
      return await this.registerAs(caller, r, version, rt);
    } finally {
      this.reserved.delete(key);
    }
  }

  private async registerAs(
    caller: Tenant,
    r: RegisterRequest,
    version: number,
    rt: RepositoryRuntime,
  ): Promise<VersionView> {
    const factory = this.factories.get(r.kind)!;
    const weights = takeWeights(this.files, this.o, caller, r, version);
    const reg = newRegistration(caller, r, version, factory, weights);
    const v = new ModelVersion(reg);
    await this.load(v, factory, rt);
    if (v.state !== 'ready') {
      this.files.remove(weights);
      throw v.error!;
    }
    this.versionsOf(r.name, true).set(version, v);
    this.persist();
    return this.view(v);
  }

  private load(v: ModelVersion, factory: ModelFactory, rt: RepositoryRuntime): Promise<void> {
    return loadVersion(v, factory, rt, {
      files: this.files,
      use: this.use,
      metrics: this.metrics,
      log: this.o.log,
    });
  }

  /**
   * The version a request goes to (the newest ready one when `version` is not given), loaded: a version
   * registered before a restart is loaded on its first use.
   */
  async ready(name: string, version?: number): Promise<ModelVersion> {
    const v = this.pick(name, version);
    if (v.state === 'ready') return v;
    if (v.state === 'registered') {
      const factory = this.factories.get(v.reg.kind);
      if (!factory) {
        v.state = 'failed';
        v.error = new TandemError('TANDEM_ERR_INVALID_ARGUMENT', `model kind ${v.reg.kind} is not available`);
      } else {
        const rt = this.runtime();
        v.loading = this.load(v, factory, rt);
      }
    }
    await v.loading;
    if ((v.state as VersionState) !== 'ready') throw v.error!;
    return v;
  }

  /**
   * `ready`'s answer when the version is already loaded (every request but a version's first), without
   * a promise: the infer route then reaches the batcher in the same microtask. Undefined when it still
   * has to load (call `ready`); throws NOT_FOUND as `ready` does.
   */
  readyNow(name: string, version?: number): ModelVersion | undefined {
    const v = this.pick(name, version);
    return v.state === 'ready' ? v : undefined;
  }

  /** The version a request names (or the newest that has not failed); throws NOT_FOUND. */
  private pick(name: string, version: number | undefined): ModelVersion {
    return pickVersion(this.byName.get(name), name, version);
  }

  list(): { name: string; versions: VersionView[] }[] {
    return [...this.byName.entries()]
      .filter(([, m]) => m.size > 0)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([name, m]) => ({ name, versions: [...m.values()].map((v) => this.view(v)) }));
  }

  describe(name: string): { name: string; versions: VersionView[] } {
    const m = this.byName.get(name);
    if (!m || m.size === 0) throw new TandemError('TANDEM_ERR_NOT_FOUND', `no model ${name}`);
    return {
      name,
      versions: [...m.values()].sort((a, b) => a.reg.version - b.reg.version).map((v) => this.view(v)),
    };
  }

  /** Unloads and forgets a version (or every version of the model); its queued requests get 503. */
  async unload(
    caller: Tenant,
    name: string,
    version?: number,
  ): Promise<{ name: string; unloaded: number[] }> {
    const m = this.byName.get(name);
    const targets =
      version === undefined ? [...(m?.values() ?? [])] : [m?.get(version)].filter((x) => x !== undefined);
    if (targets.length === 0)
      throw new TandemError(
        'TANDEM_ERR_NOT_FOUND',
        version === undefined ? `no model ${name}` : `model ${name} has no version ${version}`,
      );
    if (targets.some((v) => v.reg.owner !== caller.id) && caller.role !== 'admin')
      throw new TandemError('TANDEM_ERR_FORBIDDEN', `model ${name} belongs to another tenant`);
    for (const v of targets) m!.delete(v.reg.version);
    if (m!.size === 0) this.byName.delete(name);
    this.persist();
    for (const v of targets) await this.release(v, `model ${name} version ${v.reg.version} was unloaded`);
    return { name, unloaded: targets.map((v) => v.reg.version) };
  }

  private async release(v: ModelVersion, why: string): Promise<void> {
    await v.loading;
    await v.batcher?.close(new TandemError('TANDEM_ERR_CLOSED', why));
    await v.model?.unload();
    v.model = null;
    this.files.remove(v.reg.weights);
  }

  /** Closes every batcher (queued requests are refused) and frees the weights; the index stays. */
  async close(): Promise<void> {
    for (const m of this.byName.values())
      for (const v of m.values()) {
        await v.loading;
        await v.batcher?.close(new TandemError('TANDEM_ERR_CLOSED', 'the service is shutting down'));
        await v.model?.unload();
      }
    this.observed?.removeObserver?.(this.use);
  }

  private persist(): void {
    const all: Registration[] = [];
    for (const m of this.byName.values()) for (const v of m.values()) all.push(v.reg);
    this.files.writeIndex(all);
  }

  view(v: ModelVersion): VersionView {
    return versionView(v);
  }

  /** Queued and running requests per version (metrics). */
  *depths(): Generator<{ name: string; version: number; queued: number; inFlight: number }> {
    for (const m of this.byName.values())
      for (const v of m.values())
        if (v.batcher)
          yield {
            name: v.reg.name,
            version: v.reg.version,
            queued: v.batcher.queued,
            inFlight: v.batcher.inFlightItems,
          };
  }
}
