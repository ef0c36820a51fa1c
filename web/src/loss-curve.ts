/**
 * A training job's loss curve on its page: the `train` job writes one `step` span per optimizer step
 * with the loss in its args (service/jobs/types/train.ts), so the curve comes from the same trace the
 * timeline draws, live while the job runs. Drawn with uPlot; nothing is shown for other job types.
 */
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import type { TraceEvent } from './api.js';

/** Whole steps only on the x axis. */
const STEP_INCRS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 1e6];

export interface LossPoints {
  readonly steps: number[];
  readonly losses: number[];
}

/** The (step, loss) pairs of a trace's step spans, in step order. */
export function lossPoints(events: readonly TraceEvent[]): LossPoints {
  const pairs: [number, number][] = [];
  for (const e of events) {
    const step = e.args?.['step'];
    const loss = e.args?.['loss'];
    if (e.name === 'step' && typeof step === 'number' && typeof loss === 'number') pairs.push([step, loss]);
  }
  pairs.sort((a, b) => a[0] - b[0]);
  return { steps: pairs.map((p) => p[0]), losses: pairs.map((p) => p[1]) };
}

export class LossCurve {
  private plot: uPlot | null = null;

  constructor(private readonly box: HTMLElement) {}

  /** Shows the curve (the box stays hidden while the trace has no step spans). */
  update(events: readonly TraceEvent[]): void {
    const { steps, losses } = lossPoints(events);
    this.box.hidden = steps.length === 0;
    this.box.dataset['points'] = String(steps.length);
    if (steps.length === 0) return;
    this.box.dataset['lastLoss'] = losses[losses.length - 1]!.toFixed(4);
    const data: uPlot.AlignedData = [steps, losses];
    if (this.plot) {
      this.plot.setData(data);
      return;
    }
    this.plot = new uPlot(
      {
        width: Math.max(300, this.box.clientWidth || 600),
        height: 200,
        series: [
          { label: 'step' },
          {
            label: 'loss',
            stroke: '#1c7ed6',
            width: 1.5,
            value: (_u, v) => (v == null ? '–' : v.toFixed(4)),
          },
        ],
        scales: { x: { time: false } },
        axes: [
          { label: 'step', stroke: '#555', grid: { stroke: '#eceef2' }, incrs: STEP_INCRS },
          { label: 'loss', stroke: '#555', size: 60, grid: { stroke: '#eceef2' } },
        ],
        legend: { live: true },
        cursor: { drag: { x: false, y: false } },
      },
      data,
      this.box,
    );
  }
}
