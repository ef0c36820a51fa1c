/** The overview: devices now and over the last 15 minutes, the queue, a submit form and the jobs list. */
import { api, type Stats } from './api.js';
import { bytes, h } from './dom.js';
import { JobsList } from './jobs-list.js';
import { HistoryPlots } from './plots.js';
import { buildForm } from './submit-form.js';

export function overviewView(root: HTMLElement): () => void {
  const devices = h('div', { class: 'devices', id: 'devices' });
  const plotsBox = h('div', { class: 'plots', id: 'device-plots' });
  const queue = h('div', { id: 'queue' });
  const formBox = h('div', { id: 'submit-box' });
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | null = null;
  const list = new JobsList(() => {
    // A filter or page change shows at once instead of at the next poll.
    list.refresh().catch((e: unknown) => list.showError(message(e)));
  });
  root.replaceChildren(
    h(
      'section',
      {},
      h('h2', {}, 'Devices ', h('span', { class: 'muted' }, '— last 15 minutes, sampled every second')),
      devices,
      plotsBox,
    ),
    h(
      'div',
      { class: 'two' },
      h('section', {}, h('h2', {}, 'Submit a job'), formBox),
      h('section', {}, h('h2', {}, 'Queue'), queue),
    ),
    list.element,
  );
  const plots = new HistoryPlots(plotsBox);
  void buildForm(formBox);
  const tick = async (): Promise<void> => {
    // Each part shows its own failure (a server without the history route still lists its jobs).
    await Promise.all([
      api<Stats>('GET', '/v1/stats').then(
        (stats) => {
          renderDevices(devices, stats);
          renderQueue(queue, stats);
        },
        (e: unknown) => devices.replaceChildren(h('p', { class: 'error' }, `devices: ${message(e)}`)),
      ),
      plots.poll().catch((e: unknown) => plots.showError(message(e))),
      list.refresh().catch((e: unknown) => list.showError(message(e))),
    ]);
    if (!stopped) timer = setTimeout(() => void tick(), 1000);
  };
  void tick();
  return () => {
    stopped = true;
    if (timer) clearTimeout(timer);
    plots.destroy();
  };
}

const message = (e: unknown): string => (e instanceof Error ? e.message : String(e));

function renderDevices(box: HTMLElement, stats: Stats): void {
  if (stats.devices.length === 0) {
    box.replaceChildren(
      h('p', { class: 'muted' }, 'No devices open yet (the runtime may still be starting).'),
    );
    return;
  }
  box.replaceChildren(
    ...stats.devices.map((d) =>
      h(
        'div',
        { class: 'device', 'data-device': d.id },
        h(
          'div',
          { class: 'device-head' },
          h('b', {}, d.id),
          ' ',
          h('span', { class: 'muted' }, `${d.kind} · ${d.name}`),
        ),
        h(
          'div',
          { class: 'metric' },
          `utilization ${(d.utilization * 100).toFixed(0)}% · memory ${bytes(d.memoryUsed)} / ${bytes(d.memoryBytes)}`,
        ),
      ),
    ),
  );
}

function renderQueue(box: HTMLElement, stats: Stats): void {
  box.replaceChildren(
    h(
      'p',
      {},
      h('b', { id: 'queued-count' }, stats.queued),
      ' queued · ',
      h('b', {}, stats.running),
      ' running',
    ),
    stats.queue.length === 0
      ? h('p', { class: 'muted' }, 'The queue is empty.')
      : h(
          'table',
          {},
          h('tr', {}, h('th', {}, 'Tenant'), h('th', {}, 'Priority'), h('th', {}, 'Queued')),
          ...stats.queue.map((q) =>
            h('tr', {}, h('td', {}, q.tenant), h('td', {}, q.priority), h('td', {}, q.queued)),
          ),
        ),
  );
}
