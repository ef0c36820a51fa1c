/** Float64 references by op name, for tests and the conformance runner (never used to compute results). */
import type { ReferenceFn } from './common/reference.js';
import { axpyReference } from './axpy/reference.js';
import { binaryReference } from './binary/reference.js';
import { castReference } from './cast/reference.js';
import { copyReference } from './copy/reference.js';
import { fillReference } from './fill/reference.js';
import { gemmReference } from './gemm/reference.js';
import { noopReference } from './noop/reference.js';
import { reduceReference } from './reduce/reference.js';
import { scaleReference } from './scale/reference.js';
import { unaryReference } from './unary/reference.js';
import { NN_GROUPS } from './nn-groups.js';
import { ONNX_GROUPS } from './onnx-groups.js';

export const REFERENCES: Readonly<Record<string, ReferenceFn>> = {
  gemm: gemmReference,
  axpy: axpyReference,
  scale: scaleReference,
  unary: unaryReference,
  binary: binaryReference,
  reduce: reduceReference,
  fill: fillReference,
  copy: copyReference,
  cast: castReference,
  noop: noopReference,
  ...Object.fromEntries(NN_GROUPS.flatMap((g) => Object.entries(g.references))),
  ...Object.fromEntries(ONNX_GROUPS.flatMap((g) => Object.entries(g.references))),
};
