/** One job: state and progress live, its parameters and result, and its timeline from the trace API. */
import { api, ApiError, getKey, type Job, type TraceEvent } from './api.js';
import { h, progressBar, secs, stateBadge } from './dom.js';
import { drawTimeline } from './timeline.js';

const FINAL = new Set(['succeeded', 'failed', 'cancelled']);

export function jobView(root: HTMLElement, id: string): () => void {
  const head = h('div', { id: 'job-head' });
  const details = h('div', { class: 'two' });
  const canvas = h('canvas', { id: 'timeline', class: 'timeline' });
  const info = h('div', { class: 'muted', id: 'timeline-info' });
  const download = h('button', { id: 'download-trace' }, 'Download trace (open in ui.perfetto.dev)');
  download.addEventListener('click', () => void downloadTrace(id));
  root.replaceChildren(
    h('p', {}, h('a', { href: '#/' }, '← all jobs')),
    head,
    details,
    h('section', {}, h('h2', {}, 'Timeline'), canvas, info, download),
  );
  let stopped = false;
  let lastState = '';
  const tick = async (): Promise<void> => {
    try {
      const job = await api<Job>('GET', `/v1/jobs/${id}`);
      renderHead(head, job);
      if (job.state !== lastState || !FINAL.has(job.state)) {
        const result =
          job.state === 'succeeded'
            ? (await api<{ result: unknown }>('GET', `/v1/jobs/${id}/result`)).result
            : undefined;
        renderDetails(details, job, result);
        const trace = await api<{ traceEvents: TraceEvent[] }>('GET', `/v1/jobs/${id}/trace`);
        drawTimeline(canvas, trace.traceEvents, info);
        lastState = job.state;
      }
      if (FINAL.has(job.state)) return;
    } catch (e) {
      head.replaceChildren(
        h('p', { class: 'error' }, e instanceof ApiError ? `${e.code}: ${e.message}` : String(e)),
      );
    }
    if (!stopped) setTimeout(() => void tick(), 700);
  };
  void tick();
  return () => {
    stopped = true;
  };
}

function renderHead(box: HTMLElement, job: Job): void {
  const cancel = h('button', { id: 'cancel-job', disabled: FINAL.has(job.state) }, 'Cancel');
  cancel.addEventListener('click', () => void api('POST', `/v1/jobs/${job.id}/cancel`));
  box.replaceChildren(
    h('h2', {}, `${job.type} `, h('code', {}, job.id), ' ', stateBadge(job.state), ' ', cancel),
    h(
      'div',
      { class: 'row' },
      progressBar(job.progress),
      h('span', { id: 'job-message' }, ` ${(job.progress * 100).toFixed(0)}% ${job.message ?? ''}`),
    ),
  );
}

function renderDetails(box: HTMLElement, job: Job, result: unknown): void {
  const facts: [string, string][] = [
    ['tenant', job.tenant],
    ['priority', String(job.priority)],
    ['attempt', String(job.attempt)],
    ['device', job.device ?? '–'],
    ['placement', job.placement ?? '–'],
    ['submitted', new Date(job.createdAt).toLocaleString()],
    ['waited', secs(job.waitSeconds)],
    ['ran', secs(job.runSeconds)],
  ];
  box.replaceChildren(
    h(
      'section',
      {},
      h('h2', {}, 'Details'),
      h('dl', {}, ...facts.flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v)])),
      h('h3', {}, 'Parameters'),
      h('pre', {}, JSON.stringify(job.params, null, 2)),
    ),
    h(
      'section',
      {},
      h('h2', {}, job.error ? 'Error' : 'Result'),
      job.error
        ? h('pre', { class: 'error', id: 'job-error' }, `${job.error.code}\n${job.error.message}`)
        : h('pre', { id: 'job-result' }, result === undefined ? 'not yet' : JSON.stringify(result, null, 2)),
    ),
  );
}

async function downloadTrace(id: string): Promise<void> {
  const res = await fetch(`/v1/jobs/${id}/trace`, { headers: { authorization: `Bearer ${getKey()}` } });
  const url = URL.createObjectURL(await res.blob());
  const a = h('a', { href: url, download: `${id}.trace.json` });
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 5000);
}
