/**
 * The device history as three time-series plots (uPlot: small, fast, canvas-drawn, with time axes):
 * utilization, memory in use and queue depth, one line per device. The server keeps ~15 minutes
 * (GET /v1/devices/history); the page fetches it all once, then only the samples after its last one.
 */
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { api, type History } from './api.js';
import { bytes, h } from './dom.js';

const KEEP_SECONDS = 15 * 60;
const clock = uPlot.fmtDate('{HH}:{mm}');
const clockSeconds = uPlot.fmtDate('{HH}:{mm}:{ss}');
const COLORS = ['#2e9d6a', '#3b5bdb', '#d08a2c', '#c2255c', '#0c8599', '#7048e8', '#5c940d', '#e8590c'];

/** The samples held by the page, as columns (times in seconds, as uPlot wants them). */
interface Columns {
  t: number[];
  queued: number[];
  devices: Map<
    string,
    { kind: string; util: (number | null)[]; mem: (number | null)[]; tasks: (number | null)[] }
  >;
}

interface PlotSpec {
  readonly id: string;
  readonly title: string;
  readonly unit: string;
  /** The y axis' label. */
  readonly label: string;
  readonly build: (c: Columns, ids: string[]) => { data: (number | null)[][]; labels: string[] };
  readonly axis: (v: number) => string;
  readonly range?: [number, number];
  /** Tick steps the value axis may use (uPlot's default: 1, 2, 5 × 10^k). */
  readonly incrs?: number[];
  /** Series beyond the devices' (drawn dashed). */
  readonly extra?: number;
}

const SPECS: PlotSpec[] = [
  {
    id: 'plot-utilization',
    title: 'Utilization',
    unit: '% busy',
    label: 'busy %',
    build: (c, ids) => ({
      data: ids.map((id) => c.devices.get(id)!.util.map((u) => (u === null ? null : u * 100))),
      labels: ids,
    }),
    axis: (v) => `${v.toFixed(0)}%`,
    range: [0, 100],
  },
  {
    id: 'plot-memory',
    title: 'Memory in use',
    unit: 'bytes',
    label: 'memory',
    build: (c, ids) => ({ data: ids.map((id) => c.devices.get(id)!.mem), labels: ids }),
    axis: (v) => bytes(v),
    // Powers of two, so that ticks read 256 KiB, 512 KiB, 1 MiB rather than 976.6 KiB.
    incrs: Array.from({ length: 50 }, (_, i) => 2 ** i),
  },
  {
    id: 'plot-queue',
    title: 'Queue depth',
    unit: 'tasks on device · jobs queued',
    label: 'count',
    build: (c, ids) => ({
      data: [...ids.map((id) => c.devices.get(id)!.tasks), c.queued],
      labels: [...ids.map((id) => `${id} tasks`), 'jobs queued'],
    }),
    axis: (v) => (Number.isInteger(v) ? String(v) : ''),
    extra: 1,
  },
];

export class HistoryPlots {
  private readonly cols: Columns = { t: [], queued: [], devices: new Map() };
  private lastMs: number | null = null;
  private plots: uPlot[] = [];
  /** The device ids the plots were built for (a new device rebuilds them). */
  private builtFor = '';
  private readonly boxes: HTMLElement[];
  private readonly resize = new ResizeObserver(() => this.fit());

  constructor(readonly root: HTMLElement) {
    this.boxes = SPECS.map((s) =>
      h(
        'div',
        { class: 'plot-box', id: s.id },
        h('div', { class: 'plot-title' }, s.title, ' ', h('span', { class: 'muted' }, s.unit)),
      ),
    );
    root.replaceChildren(...this.boxes);
    this.resize.observe(root);
  }

  /** Fetches the samples taken since the last poll and redraws. */
  async poll(): Promise<void> {
    const q = this.lastMs === null ? '' : `?since=${this.lastMs}`;
    this.merge(await api<History>('GET', `/v1/devices/history${q}`));
    this.root.querySelector('.plot-error')?.remove();
    this.draw();
  }

  /** Says why the history could not be read (the plots keep what they had). */
  showError(text: string): void {
    let note = this.root.querySelector<HTMLElement>('.plot-error');
    if (!note) this.root.prepend((note = h('p', { class: 'error plot-error' })));
    note.textContent = `device history: ${text}`;
  }

  destroy(): void {
    this.resize.disconnect();
    for (const p of this.plots) p.destroy();
    this.plots = [];
  }

  private merge(hist: History): void {
    const c = this.cols;
    const before = c.t.length;
    for (let i = 0; i < hist.t.length; i++) {
      c.t.push(hist.t[i]! / 1000);
      c.queued.push(hist.queued[i]!);
    }
    for (const d of hist.devices) {
      let dev = c.devices.get(d.id);
      if (!dev) {
        // A device new to the page: nothing known for the samples it already holds.
        dev = {
          kind: d.kind,
          util: Array(before).fill(null),
          mem: Array(before).fill(null),
          tasks: Array(before).fill(null),
        };
        c.devices.set(d.id, dev);
      }
      dev.util.push(...d.utilization);
      dev.mem.push(...d.memoryUsed);
      dev.tasks.push(...d.inflight);
    }
    for (const dev of c.devices.values())
      for (const col of [dev.util, dev.mem, dev.tasks]) while (col.length < c.t.length) col.push(null);
    if (hist.t.length) this.lastMs = hist.t[hist.t.length - 1]!;
    // Keep what the server keeps.
    const from = c.t.findIndex((t) => t >= (c.t.at(-1) ?? 0) - KEEP_SECONDS);
    if (from > 0) {
      c.t.splice(0, from);
      c.queued.splice(0, from);
      for (const dev of c.devices.values())
        for (const col of [dev.util, dev.mem, dev.tasks]) col.splice(0, from);
    }
  }

  private draw(): void {
    const ids = [...this.cols.devices.keys()].sort();
    const key = ids.join(',');
    if (key !== this.builtFor || this.plots.length === 0) {
      for (const p of this.plots) p.destroy();
      this.plots = SPECS.map((s, i) => this.build(s, ids, this.boxes[i]!));
      this.builtFor = key;
      return;
    }
    SPECS.forEach((s, i) =>
      this.plots[i]!.setData([this.cols.t, ...s.build(this.cols, ids).data] as uPlot.AlignedData),
    );
  }

  private build(spec: PlotSpec, ids: string[], box: HTMLElement): uPlot {
    const { data, labels } = spec.build(this.cols, ids);
    const devices = labels.length - (spec.extra ?? 0);
    const series: uPlot.Series[] = [
      { label: 'time' },
      ...labels.map((label, i): uPlot.Series => ({
        label,
        stroke: i < devices ? COLORS[i % COLORS.length]! : '#868e96',
        width: 1.5,
        ...(i >= devices ? { dash: [5, 4] } : { fill: `${COLORS[i % COLORS.length]!}18` }),
        spanGaps: false,
        value: (_u, v) => (v === null || v === undefined ? '–' : spec.axis(v)),
      })),
    ];
    box.querySelector('.uplot')?.remove();
    return new uPlot(
      {
        width: this.width(),
        height: 170,
        series,
        scales: {
          x: { time: true },
          y: spec.range ? { range: spec.range } : { range: (_u, min, max) => [0, Math.max(1, max, min)] },
        },
        axes: [
          {
            stroke: '#555',
            label: 'time',
            // Local clock time, seconds shown only when ticks are under a minute apart.
            values: (_u, vals, _i, _space, incr) => {
              const fmt = incr < 60 ? clockSeconds : clock;
              const out = vals.map((v) => fmt(new Date(v * 1000)));
              box.dataset['xTicks'] = out.join('|');
              return out;
            },
            labelSize: 18,
            grid: { stroke: '#eceef2' },
            ticks: { stroke: '#d0d4db' },
          },
          {
            stroke: '#555',
            label: spec.label,
            labelSize: 18,
            size: 76,
            ...(spec.incrs ? { incrs: spec.incrs } : {}),
            grid: { stroke: '#eceef2' },
            ticks: { stroke: '#d0d4db' },
            values: (_u, vals) => {
              const out = vals.map((v) => spec.axis(v));
              // What the axes show, for tests and tools (uPlot draws them on the canvas).
              box.dataset['yTicks'] = out.join('|');
              return out;
            },
          },
        ],
        legend: { live: true },
        cursor: { drag: { x: false, y: false } },
      },
      [this.cols.t, ...data] as uPlot.AlignedData,
      box,
    );
  }

  private width(): number {
    const w = this.root.clientWidth;
    // Three side by side on a wide screen, one per row on a narrow one.
    return Math.max(260, w >= 900 ? Math.floor((w - 24) / 3) : w);
  }

  private fit(): void {
    for (const p of this.plots) p.setSize({ width: this.width(), height: 170 });
  }
}
