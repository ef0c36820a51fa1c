/** Shape checks shared by the nn ops: clear TANDEM_ERR_SHAPE errors before any kernel is submitted. */
import { TandemError } from '../../core/errors.js';
import { shapeStr } from '../../core/shape.js';
import type { Var } from '../var.js';

/** [rows, cols] of a rank-2 value; with `cols` given, also checks the column count. */
export function requireMatrix(op: string, name: string, v: Var, cols?: number): [number, number] {
  if (v.shape.length !== 2)
    throw new TandemError('TANDEM_ERR_SHAPE', `${op}: ${name} must be a matrix, it is ${shapeStr(v.shape)}`);
  const [r, c] = v.shape as [number, number];
  if (cols !== undefined && c !== cols)
    throw new TandemError(
      'TANDEM_ERR_SHAPE',
      `${op}: ${name} ${shapeStr(v.shape)} has ${c} columns where ${cols} are needed`,
    );
  return [r, c];
}

export function requireShape(op: string, name: string, v: Var, shape: readonly number[]): void {
  if (v.shape.length !== shape.length || v.shape.some((d, i) => d !== shape[i]))
    throw new TandemError(
      'TANDEM_ERR_SHAPE',
      `${op}: ${name} is ${shapeStr(v.shape)}, expected ${shapeStr(shape)}`,
    );
}

export function requireDtype(op: string, name: string, v: Var, dtype: string): void {
  if (v.dtype !== dtype)
    throw new TandemError('TANDEM_ERR_DTYPE', `${op}: ${name} is ${v.dtype}, expected ${dtype}`);
}
