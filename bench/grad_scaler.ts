/**
 * Tandem's GradScaler trajectory for a given sequence of overflowing iterations, printed exactly as
 * bench/torch/grad_scaler.py prints torch's (one compact JSON line per iteration; with more than 100
 * iterations only overflows, scale changes and the last), so the two outputs diff clean:
 *
 *   npm run build
 *   diff <(node dist/bench/grad_scaler.js --growth-interval 3 --overflow 3,10,11 --steps 12) \
 *        <(python3 bench/torch/grad_scaler.py --growth-interval 3 --overflow 3,10,11 --steps 12)
 *   diff <(node dist/bench/grad_scaler.js --growth-interval 2000 --overflow 1999,4500 --steps 6001) \
 *        <(python3 bench/torch/grad_scaler.py --growth-interval 2000 --overflow 1999,4500 --steps 6001)
 */
import { parseArgs } from 'node:util';
import { GradScaler } from '../src/nn/grad-scaler.js';

const { values } = parseArgs({
  options: {
    steps: { type: 'string', default: '12' },
    overflow: { type: 'string', default: '3,10,11' },
    'growth-interval': { type: 'string', default: '3' },
    'init-scale': { type: 'string', default: String(2 ** 16) },
    'growth-factor': { type: 'string', default: '2' },
    'backoff-factor': { type: 'string', default: '0.5' },
  },
});
const steps = Number(values.steps);
const overflow = new Set(
  values.overflow
    .split(',')
    .filter((s) => s !== '')
    .map(Number),
);
const scaler = new GradScaler({
  growthInterval: Number(values['growth-interval']),
  initScale: Number(values['init-scale']),
  growthFactor: Number(values['growth-factor']),
  backoffFactor: Number(values['backoff-factor']),
});

let prev = scaler.scale;
for (let it = 1; it <= steps; it++) {
  const { stepped, scale } = scaler.update(overflow.has(it));
  if (steps <= 100 || overflow.has(it) || scale !== prev || it === steps) {
    const line = {
      iter: it,
      overflow: overflow.has(it),
      scale,
      growth_tracker: scaler.growthTracker,
      stepped,
    };
    console.log(JSON.stringify(line));
  }
  prev = scale;
}
