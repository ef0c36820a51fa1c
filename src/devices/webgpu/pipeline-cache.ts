/**
 * Compute pipelines cached by (source, entry, constants). A shader that fails to compile becomes a
 * TandemError 'TANDEM_ERR_COMPILE' carrying Dawn's messages with line:column; the failure is cached
 * too, so a broken kernel does not recompile on every launch.
 */
import { TandemError } from '../../core/errors.js';

export interface PipelineKey {
  readonly wgsl: string;
  readonly entry: string;
  readonly constants?: Readonly<Record<string, number>>;
}

function cacheKey(k: PipelineKey): string {
  const constants = k.constants ? JSON.stringify(Object.entries(k.constants).sort()) : '';
  return `${k.entry}\u0000${constants}\u0000${k.wgsl}`;
}

function firstLine(wgsl: string): string {
  return wgsl.trim().split('\n', 1)[0]!.slice(0, 80);
}

export class PipelineCache {
  private readonly cache = new Map<string, Promise<GPUComputePipeline>>();
  compiled = 0;

  constructor(
    private readonly deviceId: string,
    private readonly device: GPUDevice,
  ) {}

  get size(): number {
    return this.cache.size;
  }

  get(key: PipelineKey): Promise<GPUComputePipeline> {
    const k = cacheKey(key);
    let p = this.cache.get(k);
    if (!p) {
      p = this.compile(key);
      this.cache.set(k, p);
    }
    return p;
  }

  private async compile(key: PipelineKey): Promise<GPUComputePipeline> {
    this.compiled++;
    // The scope keeps Dawn from reporting the error as uncaptured; the messages come from compilation info.
    this.device.pushErrorScope('validation');
    const module = this.device.createShaderModule({ code: key.wgsl });
    const scoped = this.device.popErrorScope();
    const info = await module.getCompilationInfo();
    const errors = info.messages.filter((m) => m.type === 'error');
    const scopeError = await scoped;
    if (errors.length > 0 || scopeError) {
      const lines = errors.map((m) => `${m.lineNum}:${m.linePos}: ${m.message}`);
      if (lines.length === 0 && scopeError) lines.push(scopeError.message);
      throw new TandemError(
        'TANDEM_ERR_COMPILE',
        `${this.deviceId}: WGSL failed to compile (${firstLine(key.wgsl)} ...):\n${lines.join('\n')}`,
        { device: this.deviceId, entry: key.entry, messages: lines },
      );
    }
    try {
      return await this.device.createComputePipelineAsync({
        layout: 'auto',
        compute: {
          module,
          entryPoint: key.entry,
          ...(key.constants ? { constants: { ...key.constants } } : {}),
        },
      });
    } catch (e) {
      const msg = e instanceof Error ? e.message : String(e);
      throw new TandemError(
        'TANDEM_ERR_COMPILE',
        `${this.deviceId}: pipeline for entry '${key.entry}' could not be created: ${msg}`,
        { device: this.deviceId, entry: key.entry, messages: [msg] },
        { cause: e },
      );
    }
  }
}
