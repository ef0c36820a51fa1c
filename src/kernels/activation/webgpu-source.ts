/**
 * The activations in WGSL (f32 arithmetic), for the element-wise steps of the linear group. WGSL's
 * tanh may be computed through exp and turn to NaN for large arguments, so the argument is clamped to
 * ±15 first (tanh(15) rounds to 1 in f32).
 */
import { GELU_CUBIC, GELU_SCALE, type ActOp } from './ops.js';

export const ACT_WGSL = `fn gelu_u(x: f32) -> f32 { return tanh(clamp(${GELU_SCALE} * (x + ${GELU_CUBIC} * x * x * x), -15.0, 15.0)); }
fn act_gelu(x: f32) -> f32 { return 0.5 * x * (1.0 + gelu_u(x)); }
fn act_gelu_grad(x: f32) -> f32 {
  let t = gelu_u(x);
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * ${GELU_SCALE} * (1.0 + 3.0 * ${GELU_CUBIC} * x * x);
}
fn act_relu(x: f32) -> f32 { return select(x, 0.0, x < 0.0); }
`;

/** WGSL expression of op(x) over the f32 variable `x`. */
export function actExpr(op: ActOp, x: string): string {
  return op === 'gelu' ? `act_gelu(${x})` : `act_relu(${x})`;
}

/** WGSL expression of op′(x)·g, relu′(0) = 0 (g passes through unchanged where x > 0). */
export function actGradExpr(op: ActOp, x: string, g: string): string {
  return op === 'gelu' ? `act_gelu_grad(${x}) * ${g}` : `select(0.0, ${g}, ${x} > 0.0)`;
}
