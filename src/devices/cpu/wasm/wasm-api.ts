/**
 * The few WebAssembly JS API members we use, typed locally: the project's `lib` has no DOM and
 * @types/node does not declare the WebAssembly global, and a local type avoids a global declaration
 * that could clash with another package's.
 */
export interface WasmMemory {
  readonly buffer: SharedArrayBuffer;
  grow(pages: number): number;
}

export interface WasmInstance {
  readonly exports: Readonly<Record<string, unknown>>;
}

interface WasmApi {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (
    module: object,
    imports: Readonly<Record<string, Readonly<Record<string, unknown>>>>,
  ) => WasmInstance;
  Memory: new (descriptor: { initial: number; maximum: number; shared: true }) => WasmMemory;
}

export const wasmApi: WasmApi = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;

export const WASM_PAGE_BYTES = 65536;
