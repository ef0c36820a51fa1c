/** Typed koffi bindings of NVRTC (run-time compilation of CUDA C to CUBIN for the device's arch). */
import { TandemError } from '../../../core/errors.js';
import type { KoffiLib } from './loader.js';
import type { Out } from './driver.js';

interface NvrtcApi {
  nvrtcVersion(major: Out<number>, minor: Out<number>): number;
  nvrtcCreateProgram(
    prog: Out<number>,
    src: string,
    name: string,
    numHeaders: number,
    headers: null,
    includeNames: null,
  ): number;
  nvrtcCompileProgram(prog: number, numOptions: number, options: string[]): number;
  nvrtcGetCUBINSize(prog: number, size: Out<number>): number;
  nvrtcGetCUBIN(prog: number, cubin: Uint8Array): number;
  nvrtcGetProgramLogSize(prog: number, size: Out<number>): number;
  nvrtcGetProgramLog(prog: number, log: Uint8Array): number;
  nvrtcDestroyProgram(prog: Out<number>): number;
  nvrtcGetErrorString(rc: number): string;
  nvrtcAddNameExpression(prog: number, expr: string): number;
  nvrtcGetLoweredName(prog: number, expr: string, lowered: Out<string | null>): number;
}

const DECLS: Record<keyof NvrtcApi, string> = {
  nvrtcVersion: 'int nvrtcVersion(_Out_ int *major, _Out_ int *minor)',
  nvrtcCreateProgram:
    'int nvrtcCreateProgram(_Out_ uint64_t *prog, const char *src, const char *name, int numHeaders, const char **headers, const char **includeNames)',
  nvrtcCompileProgram: 'int nvrtcCompileProgram(uint64_t prog, int numOptions, const char **options)',
  nvrtcGetCUBINSize: 'int nvrtcGetCUBINSize(uint64_t prog, _Out_ size_t *size)',
  nvrtcGetCUBIN: 'int nvrtcGetCUBIN(uint64_t prog, uint8_t *cubin)',
  nvrtcGetProgramLogSize: 'int nvrtcGetProgramLogSize(uint64_t prog, _Out_ size_t *size)',
  nvrtcGetProgramLog: 'int nvrtcGetProgramLog(uint64_t prog, uint8_t *log)',
  nvrtcDestroyProgram: 'int nvrtcDestroyProgram(_Inout_ uint64_t *prog)',
  nvrtcGetErrorString: 'const char *nvrtcGetErrorString(int rc)',
  nvrtcAddNameExpression: 'int nvrtcAddNameExpression(uint64_t prog, const char *expr)',
  nvrtcGetLoweredName: 'int nvrtcGetLoweredName(uint64_t prog, const char *expr, _Out_ const char **lowered)',
};

export interface CompileOutput {
  readonly cubin: Uint8Array;
  readonly log: string;
  /** The symbol to look up in the module (C++ entries are mangled; extern "C" ones are not). */
  readonly lowered: string;
}

export class Nvrtc {
  private readonly api: NvrtcApi;
  readonly version: string;

  constructor(
    lib: KoffiLib,
    readonly path: string,
  ) {
    const api = {} as Record<string, unknown>;
    for (const [name, decl] of Object.entries(DECLS)) api[name] = lib.func(decl);
    this.api = api as unknown as NvrtcApi;
    const major: Out<number> = [0];
    const minor: Out<number> = [0];
    this.check(this.api.nvrtcVersion(major, minor), 'nvrtcVersion');
    this.version = `${major[0]}.${minor[0]}`;
  }

  private check(rc: number, call: string): void {
    if (rc !== 0) {
      throw new TandemError(
        'TANDEM_ERR_DRIVER',
        `${call} failed: NVRTC error ${rc} (${this.api.nvrtcGetErrorString(rc)})`,
        {
          call,
          nvrtcResult: rc,
        },
      );
    }
  }

  /** Compiles to CUBIN; a compile error becomes TANDEM_ERR_COMPILE carrying the compiler log. */
  compile(source: string, name: string, entry: string, options: readonly string[]): CompileOutput {
    const prog: Out<number> = [0];
    this.check(this.api.nvrtcCreateProgram(prog, source, name, 0, null, null), 'nvrtcCreateProgram');
    try {
      this.check(this.api.nvrtcAddNameExpression(prog[0], `&${entry}`), 'nvrtcAddNameExpression');
      const rc = this.api.nvrtcCompileProgram(prog[0], options.length, [...options]);
      const log = this.log(prog[0]);
      if (rc !== 0) {
        throw new TandemError(
          'TANDEM_ERR_COMPILE',
          `NVRTC could not compile ${name}: ${this.api.nvrtcGetErrorString(rc)}\n${log}`,
          {
            program: name,
            log,
            options: [...options],
          },
        );
      }
      const size: Out<number> = [0];
      this.check(this.api.nvrtcGetCUBINSize(prog[0], size), 'nvrtcGetCUBINSize');
      const cubin = new Uint8Array(Number(size[0]));
      this.check(this.api.nvrtcGetCUBIN(prog[0], cubin), 'nvrtcGetCUBIN');
      const lowered: Out<string | null> = [null];
      this.check(this.api.nvrtcGetLoweredName(prog[0], `&${entry}`, lowered), 'nvrtcGetLoweredName');
      return { cubin, log, lowered: lowered[0] ?? entry };
    } finally {
      this.api.nvrtcDestroyProgram(prog);
    }
  }

  private log(prog: number): string {
    const size: Out<number> = [0];
    if (this.api.nvrtcGetProgramLogSize(prog, size) !== 0 || Number(size[0]) <= 1) return '';
    const buf = new Uint8Array(Number(size[0]));
    this.api.nvrtcGetProgramLog(prog, buf);
    return Buffer.from(buf.buffer, 0, buf.length - 1).toString('utf8');
  }
}
