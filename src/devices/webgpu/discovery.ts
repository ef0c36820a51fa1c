/**
 * Adapter discovery: ask Dawn for an adapter on each backend in order, keep the first hardware one, and
 * accept a software rasterizer (llvmpipe, lavapipe, SwiftShader) only when no hardware adapter exists and
 * the options allow it — marked as software in the device info, never silently. Every attempt is
 * recorded so an unavailable backend says exactly what it tried.
 */
import type { DawnBackend, WebGpuOptions } from './options.js';

export type DawnModule = typeof import('webgpu');

export interface FoundAdapter {
  readonly dawn: DawnModule;
  readonly gpu: GPU;
  readonly adapter: GPUAdapter;
  readonly backend: DawnBackend;
  readonly featureLevel: 'core' | 'compatibility';
  readonly software: boolean;
  /** One line per backend tried, for logs and `tandem devices`. */
  readonly attempts: readonly string[];
}

export type Discovery = { ok: true; found: FoundAdapter } | { ok: false; reason: string };

const SOFTWARE = /llvmpipe|lavapipe|swiftshader|softpipe|software rasterizer/i;

export function adapterName(a: GPUAdapter): string {
  const i = a.info;
  return [i.vendor, i.device, i.description].filter((s) => s !== '').join(' / ') || 'unnamed adapter';
}

function isSoftware(a: GPUAdapter): boolean {
  const i = a.info as GPUAdapterInfo & { isFallbackAdapter?: boolean };
  return i.isFallbackAdapter === true || SOFTWARE.test(`${i.vendor} ${i.device} ${i.description}`);
}

async function loadDawn(): Promise<DawnModule | string> {
  try {
    return await import('webgpu');
  } catch (e) {
    return `cannot load the 'webgpu' package (Dawn): ${e instanceof Error ? e.message : String(e)}`;
  }
}

export async function discoverAdapter(opts: WebGpuOptions): Promise<Discovery> {
  const dawn = await loadDawn();
  if (typeof dawn === 'string') return { ok: false, reason: dawn };
  const attempts: string[] = [];
  let softwareChoice: Omit<FoundAdapter, 'attempts'> | undefined;
  for (const backend of opts.backends) {
    if (backend === 'opengles' && opts.eglPlatform !== '' && process.env.EGL_PLATFORM === undefined) {
      // Mesa's EGL picks X11/Wayland otherwise and finds no display on servers and in CI.
      process.env.EGL_PLATFORM = opts.eglPlatform;
    }
    let gpu: GPU;
    try {
      gpu = dawn.create([`backend=${backend}`, ...opts.dawnFlags]);
    } catch (e) {
      attempts.push(`${backend}: instance creation failed: ${e instanceof Error ? e.message : String(e)}`);
      continue;
    }
    // 'core' first: it has the full limits; OpenGL ES only offers 'compatibility'.
    let found: { adapter: GPUAdapter; featureLevel: 'core' | 'compatibility' } | undefined;
    for (const featureLevel of ['core', 'compatibility'] as const) {
      try {
        const adapter = await gpu.requestAdapter({ featureLevel, powerPreference: 'high-performance' });
        if (adapter) {
          found = { adapter, featureLevel };
          break;
        }
      } catch (e) {
        attempts.push(`${backend}/${featureLevel}: ${e instanceof Error ? e.message : String(e)}`);
      }
    }
    if (!found) {
      attempts.push(`${backend}: no adapter (driver or loader library missing?)`);
      continue;
    }
    // Dawn's null backend computes nothing: never a hardware choice.
    const software = backend === 'null' || isSoftware(found.adapter);
    attempts.push(
      `${backend}: ${adapterName(found.adapter)} (${found.featureLevel}${software ? ', software' : ''})`,
    );
    const choice = { dawn, gpu, backend, software, ...found };
    if (!software) return { ok: true, found: { ...choice, attempts } };
    softwareChoice ??= choice;
  }
  if (softwareChoice && opts.allowSoftware) return { ok: true, found: { ...softwareChoice, attempts } };
  const why = softwareChoice
    ? 'only software adapters were found and webgpu.allowSoftware is false'
    : 'no adapter';
  return { ok: false, reason: `${why}; tried ${attempts.join('; ')}` };
}
