/** One job: state and progress live, its parameters and result, and its timeline from the trace API. */
import { api, ApiError, getKey, type Job, type TraceEvent } from './api.js';
import { h, progressBar, secs, stateBadge } from './dom.js';
import { LossCurve } from './loss-curve.js';
import { drawTimeline } from './timeline.js';

const FINAL = new Set(['succeeded', 'failed', 'cancelled']);

export function jobView(root: HTMLElement, id: string): () => void {
  const head = h('div', { id: 'job-head' });
  const details = h('div', { class: 'two' });
  const canvas = h('canvas', { id: 'timeline', class: 'timeline' });
  const info = h('div', { class: 'muted', id: 'timeline-info' });
  const download = h('button', { id: 'download-trace' }, 'Download trace (open in ui.perfetto.dev)');
  const lossBox = h('div', { id: 'loss-curve', hidden: true }, h('h2', {}, 'Loss'));
  const loss = new LossCurve(lossBox);
  download.addEventListener('click', () => void downloadTrace(id));
  root.replaceChildren(
    h('p', {}, h('a', { href: '#/' }, '← all jobs')),
    head,
    details,
    h('section', { id: 'loss-section' }, lossBox),
    h(
      'section',
      {},
      h(
        'h2',
        {},
        'Timeline ',
        h('span', { class: 'muted' }, '— the job, then each device queue and copy engine'),
      ),
      canvas,
      info,
      download,
    ),
  );
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | null = null;
  let lastState = '';
  let lastTrace = 0;
  // Built once and updated in place: a button re-created every poll would lose a click made across it.
  const headView = new JobHead(head, () => {
    if (timer) clearTimeout(timer);
    void tick();
  });
  const tick = async (): Promise<void> => {
    timer = null;
    try {
      const job = await api<Job>('GET', `/v1/jobs/${id}`);
      headView.show(job);
      const changed = job.state !== lastState;
      if (changed || !FINAL.has(job.state)) {
        const result =
          job.state === 'succeeded'
            ? (await api<{ result: unknown }>('GET', `/v1/jobs/${id}/result`)).result
            : undefined;
        if (changed || job.state === 'running') renderDetails(details, job, result);
        // A running job's trace grows with every task: redrawn every 2 s, and once at the end.
        if (changed || Date.now() - lastTrace > 2000) {
          const trace = await api<{ traceEvents: TraceEvent[] }>('GET', `/v1/jobs/${id}/trace`);
          drawTimeline(canvas, trace.traceEvents, info);
          loss.update(trace.traceEvents);
          lastTrace = Date.now();
        }
        lastState = job.state;
      }
      if (FINAL.has(job.state)) return;
    } catch (e) {
      headView.error(e instanceof ApiError ? `${e.code}: ${e.message}` : String(e));
    }
    if (!stopped) timer = setTimeout(() => void tick(), 700);
  };
  void tick();
  return () => {
    stopped = true;
    if (timer) clearTimeout(timer);
  };
}

/** The job's title, state, cancel button and progress. */
class JobHead {
  private readonly title = h('span', {});
  private readonly badge = h('span', {});
  private readonly cancel = h('button', { id: 'cancel-job', type: 'button' }, 'Cancel');
  private readonly bar = h('span', {});
  private readonly message = h('span', { id: 'job-message' });
  private readonly problem = h('p', { class: 'error', hidden: true });

  constructor(box: HTMLElement, refresh: () => void) {
    box.replaceChildren(
      h('h2', {}, this.title, ' ', this.badge, ' ', this.cancel),
      h('div', { class: 'row' }, this.bar, this.message),
      this.problem,
    );
    this.cancel.addEventListener('click', () => {
      const id = this.cancel.dataset['job'];
      if (!id) return;
      this.cancel.disabled = true;
      api('POST', `/v1/jobs/${id}/cancel`).then(refresh, (e: unknown) => {
        this.error(e instanceof ApiError ? `cancel: ${e.code}: ${e.message}` : String(e));
        this.cancel.disabled = false;
      });
    });
  }

  show(job: Job): void {
    this.problem.hidden = true;
    this.title.replaceChildren(`${job.type} `, h('code', {}, job.id));
    const cancelling = job.state === 'running' && job.cancelRequested;
    this.badge.replaceChildren(
      stateBadge(job.state),
      cancelling ? h('span', { class: 'muted', id: 'job-cancelling' }, ' cancel requested, stopping…') : '',
    );
    this.cancel.dataset['job'] = job.id;
    this.cancel.disabled = FINAL.has(job.state) || cancelling;
    this.cancel.hidden = FINAL.has(job.state);
    this.bar.replaceChildren(progressBar(job.progress));
    const where = job.device ? ` · on ${job.device}` : '';
    // The stored message is the last one written (a few a second): stale once the job has finished.
    const note = job.state === 'running' ? (job.message ?? '') : job.state;
    this.message.textContent = ` ${(job.progress * 100).toFixed(0)}% ${note}${where}`;
  }

  error(text: string): void {
    this.problem.textContent = text;
    this.problem.hidden = false;
  }
}

function renderDetails(box: HTMLElement, job: Job, result: unknown): void {
  const facts: [string, string][] = [
    ['tenant', job.tenant],
    ['priority', String(job.priority)],
    ['attempt', String(job.attempt)],
    ['ran on', job.device ?? '–'],
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
      h('h2', {}, job.state === 'cancelled' ? 'Cancelled' : job.error ? 'Error' : 'Result'),
      job.state === 'cancelled'
        ? h(
            'p',
            { id: 'job-cancelled' },
            `Cancelled ${job.finishedAt ? `at ${new Date(job.finishedAt).toLocaleTimeString()}` : ''}: `,
            h('span', { class: 'muted' }, job.error?.message ?? 'cancelled'),
          )
        : job.error
          ? h('pre', { class: 'error', id: 'job-error' }, `${job.error.code}\n${job.error.message}`)
          : h(
              'pre',
              { id: 'job-result' },
              result === undefined ? 'not yet' : JSON.stringify(result, null, 2),
            ),
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
