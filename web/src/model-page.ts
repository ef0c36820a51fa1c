/**
 * One served model (docs/serving.md): its versions with state, placement, batching and weights, and
 * live figures polled from GET /v1/models/{name} every second: requests a second and mean batch size
 * over the last minute (the service keeps them per second), and p50/p99 latency sampled each poll.
 * Plotted with uPlot, as the job page's loss curve is.
 */
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { api, ApiError } from './api.js';
import { bytes, h } from './dom.js';

export interface ModelVersionView {
  name: string;
  version: number;
  kind: string;
  state: string;
  error: { code: string; message: string } | null;
  placement: { kinds: string[]; preferIdle?: boolean };
  batching: { maxBatchSize: number; maxQueueDelayUs: number; instances: number; maxQueueSize: number };
  weightBytes: number | null;
  queued: number;
  inFlight: number;
  stats: {
    requests: number;
    failures: number;
    batches: number;
    meanBatchSize: number;
    throughput: number;
    p50Ms: number | null;
    p99Ms: number | null;
    perSecond: { t: number; requests: number; meanBatchSize: number }[];
  };
}

export interface ModelView {
  name: string;
  versions: ModelVersionView[];
}

function plot(
  box: HTMLElement,
  label: string,
  color: string,
  unit: string,
): (x: number[], y: number[]) => void {
  let p: uPlot | null = null;
  return (x, y) => {
    const data: uPlot.AlignedData = [x, y];
    if (p) return p.setData(data);
    p = new uPlot(
      {
        width: Math.max(300, box.clientWidth || 420),
        height: 160,
        series: [
          {},
          {
            label,
            stroke: color,
            width: 1.5,
            value: (_u, v) => (v == null ? '–' : `${v.toFixed(2)} ${unit}`),
          },
        ],
        axes: [
          { stroke: '#555', grid: { stroke: '#eceef2' } },
          { stroke: '#555', size: 55, grid: { stroke: '#eceef2' } },
        ],
        legend: { live: true },
        cursor: { drag: { x: false, y: false } },
      },
      data,
      box,
    );
  };
}

function versionsTable(m: ModelView): HTMLElement {
  const rows = m.versions.map((v) =>
    h(
      'tr',
      { 'data-version': v.version, 'data-state': v.state },
      h('td', {}, v.version),
      h('td', {}, v.kind),
      h('td', {}, v.error ? `${v.state}: ${v.error.code}` : v.state),
      h('td', {}, `${v.placement.kinds.join(' → ')}${v.placement.preferIdle ? ' (idle first)' : ''}`),
      h('td', {}, `≤ ${v.batching.maxBatchSize} × ${v.batching.instances}, ${v.batching.maxQueueDelayUs} µs`),
      h('td', {}, v.weightBytes === null ? '–' : bytes(v.weightBytes)),
      h('td', {}, `${v.stats.requests} (${v.stats.failures} failed)`),
      h('td', {}, `${v.queued} / ${v.inFlight}`),
      h(
        'td',
        {},
        v.stats.p50Ms === null ? '–' : `${v.stats.p50Ms.toFixed(2)} / ${v.stats.p99Ms!.toFixed(2)} ms`,
      ),
    ),
  );
  return h(
    'table',
    { id: 'model-versions' },
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        ...[
          'version',
          'kind',
          'state',
          'placement',
          'batching',
          'weights',
          'requests',
          'queued / running',
          'p50 / p99',
        ].map((c) => h('th', {}, c)),
      ),
    ),
    h('tbody', {}, ...rows),
  );
}

export function modelView(root: HTMLElement, name: string): () => void {
  const head = h('h2', { id: 'model-head' }, name);
  const table = h('div', { id: 'model-table' });
  const figures = h('p', { id: 'model-figures', class: 'muted' });
  const rpsBox = h('div', { id: 'model-throughput', class: 'plot' }, h('h3', {}, 'Requests / s'));
  const batchBox = h('div', { id: 'model-batch', class: 'plot' }, h('h3', {}, 'Mean batch size'));
  const latBox = h('div', { id: 'model-latency', class: 'plot' }, h('h3', {}, 'Latency p99 (ms)'));
  const error = h('p', { class: 'error', hidden: true });
  root.replaceChildren(
    h('p', {}, h('a', { href: '#/' }, '← overview')),
    head,
    error,
    table,
    figures,
    h('section', { class: 'two' }, rpsBox, batchBox),
    h('section', {}, latBox),
  );
  const drawRps = plot(rpsBox, 'requests/s', '#1c7ed6', 'req/s');
  const drawBatch = plot(batchBox, 'mean batch', '#2f9e44', '');
  const drawLat = plot(latBox, 'p99', '#e8590c', 'ms');
  const latT: number[] = [];
  const latV: number[] = [];
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | null = null;
  const tick = async (): Promise<void> => {
    try {
      const m = await api<ModelView>('GET', `/v1/models/${encodeURIComponent(name)}`);
      error.hidden = true;
      table.replaceChildren(versionsTable(m));
      // The figures are the newest version's (the one unnamed requests go to).
      const v = m.versions.reduce((a, b) => (b.version > a.version && b.state !== 'failed' ? b : a));
      const s = v.stats;
      figures.textContent = `version ${v.version}: ${s.throughput.toFixed(1)} req/s over 10 s · mean batch ${s.meanBatchSize.toFixed(1)} · ${s.batches} batches`;
      root.dataset['requests'] = String(s.requests);
      root.dataset['batches'] = String(s.batches);
      const x = s.perSecond.map((p) => p.t);
      drawRps(
        x,
        s.perSecond.map((p) => p.requests),
      );
      drawBatch(
        x,
        s.perSecond.map((p) => p.meanBatchSize),
      );
      if (s.p99Ms !== null) {
        latT.push(Date.now() / 1000);
        latV.push(s.p99Ms);
        if (latT.length > 120) [latT, latV].forEach((a) => a.shift());
        drawLat(latT.slice(), latV.slice());
      }
    } catch (e) {
      error.hidden = false;
      error.textContent = e instanceof ApiError ? `${e.code}: ${e.message}` : String(e);
    }
    if (!stopped) timer = setTimeout(() => void tick(), 1000);
  };
  void tick();
  return () => {
    stopped = true;
    if (timer) clearTimeout(timer);
  };
}

/** The models in the header's nav, refreshed every 5 s (links to their pages). */
export function modelsNav(nav: HTMLElement): void {
  const refresh = async (): Promise<void> => {
    try {
      const r = await api<{ models: { name: string }[] }>('GET', '/v1/models');
      nav.replaceChildren(
        ...(r.models.length ? [h('span', { class: 'muted' }, 'models:')] : []),
        ...r.models.map((m) =>
          h('a', { href: `#/models/${encodeURIComponent(m.name)}`, 'data-model': m.name }, m.name),
        ),
      );
    } catch {
      nav.replaceChildren();
    }
    setTimeout(() => void refresh(), 5000);
  };
  void refresh();
}
