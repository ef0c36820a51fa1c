/**
 * Agent heartbeats in Redis: each agent writes what it has (device classes, devices with total and free
 * memory, utilization, running jobs) under a key that expires after three missed beats, so a killed
 * agent drops out of the list on its own. The control plane reads the list to hold jobs no agent can fit,
 * and the autoscaler to know how busy each device class is.
 */
import type { Redis } from 'ioredis';

export interface AgentDevice {
  readonly id: string;
  readonly kind: string;
  readonly deviceClass: string;
  readonly memoryBytes: number;
  readonly freeBytes: number;
  /** Busy fraction of the last few seconds, in [0, 1]. */
  readonly utilization: number;
}

export interface AgentInfo {
  readonly name: string;
  readonly host: string;
  readonly pid: number;
  readonly deviceClasses: readonly string[];
  readonly devices: readonly AgentDevice[];
  readonly running: number;
  readonly capacity: number;
  readonly jobsDone: number;
  readonly reruns: number;
  /** Largest job (bytes of device memory) this agent can take per device class when idle. */
  readonly maxJobBytes: Readonly<Record<string, number>>;
  readonly at: number;
}

export interface AgentRegistry {
  beat(info: AgentInfo): Promise<void>;
  list(): Promise<AgentInfo[]>;
  remove(name: string): Promise<void>;
}

export class RedisAgentRegistry implements AgentRegistry {
  constructor(
    private readonly redis: Redis,
    private readonly prefix = 'tandem',
    private readonly ttlMs = 3000,
  ) {}

  private key(name: string): string {
    return `${this.prefix}:agent:${name}`;
  }

  async beat(info: AgentInfo): Promise<void> {
    await this.redis
      .multi()
      .set(this.key(info.name), JSON.stringify(info), 'PX', this.ttlMs)
      .sadd(`${this.prefix}:agents`, info.name)
      .exec();
  }

  async list(): Promise<AgentInfo[]> {
    const names = await this.redis.smembers(`${this.prefix}:agents`);
    if (names.length === 0) return [];
    const vals = await this.redis.mget(...names.map((n) => this.key(n)));
    const gone = names.filter((_, i) => vals[i] === null);
    if (gone.length > 0) await this.redis.srem(`${this.prefix}:agents`, ...gone);
    return vals.filter((v): v is string => v !== null).map((v) => JSON.parse(v) as AgentInfo);
  }

  async remove(name: string): Promise<void> {
    await this.redis.multi().del(this.key(name)).srem(`${this.prefix}:agents`, name).exec();
  }
}

/** The device class a device belongs to: its kind for CPUs, 'gpu' for any accelerator. */
export function deviceClassOf(kind: string): string {
  return kind === 'cpu' ? 'cpu' : 'gpu';
}
