/** The overview: devices with live plots, the queue, a submit form and the jobs table. */
import { api, ApiError, type Job, type JobType, type Stats } from './api.js';
import { bytes, h, progressBar, secs, stateBadge } from './dom.js';
import { Series } from './plots.js';

const util = new Map<string, Series>();
const mem = new Map<string, Series>();

export function overviewView(root: HTMLElement): () => void {
  const devices = h('div', { class: 'devices', id: 'devices' });
  const queue = h('div', { id: 'queue' });
  const jobs = h('tbody', { id: 'jobs-body' });
  const formBox = h('div', { id: 'submit-box' });
  root.replaceChildren(
    h('section', {}, h('h2', {}, 'Devices'), devices),
    h(
      'div',
      { class: 'two' },
      h('section', {}, h('h2', {}, 'Submit a job'), formBox),
      h('section', {}, h('h2', {}, 'Queue'), queue),
    ),
    h(
      'section',
      {},
      h('h2', {}, 'Jobs'),
      h(
        'table',
        { class: 'jobs' },
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            ...['Job', 'Type', 'Tenant', 'State', 'Progress', 'Device', 'Wait', 'Run', 'Submitted'].map((t) =>
              h('th', {}, t),
            ),
          ),
        ),
        jobs,
      ),
    ),
  );
  void buildForm(formBox);
  let stopped = false;
  const tick = async (): Promise<void> => {
    try {
      const [stats, list] = await Promise.all([
        api<Stats>('GET', '/v1/stats'),
        api<{ jobs: Job[] }>('GET', '/v1/jobs?limit=25'),
      ]);
      renderDevices(devices, stats);
      renderQueue(queue, stats);
      jobs.replaceChildren(...list.jobs.map(jobRow));
    } catch (e) {
      jobs.replaceChildren(
        h('tr', {}, h('td', { colspan: 9, class: 'error' }, e instanceof Error ? e.message : String(e))),
      );
    }
    if (!stopped) setTimeout(() => void tick(), 1000);
  };
  void tick();
  return () => {
    stopped = true;
  };
}

function renderDevices(box: HTMLElement, stats: Stats): void {
  if (stats.devices.length === 0) {
    box.replaceChildren(
      h('p', { class: 'muted' }, 'No devices open yet (the runtime may still be starting).'),
    );
    return;
  }
  const cards = stats.devices.map((d) => {
    let u = util.get(d.id);
    if (!u) util.set(d.id, (u = new Series()));
    let m = mem.get(d.id);
    if (!m) mem.set(d.id, (m = new Series()));
    u.push(d.utilization);
    m.push(d.memoryUsed);
    const uc = h('canvas', { class: 'plot' });
    const mc = h('canvas', { class: 'plot' });
    const card = h(
      'div',
      { class: 'device', 'data-device': d.id },
      h(
        'div',
        { class: 'device-head' },
        h('b', {}, d.id),
        ' ',
        h('span', { class: 'muted' }, `${d.kind} · ${d.name}`),
      ),
      h('div', { class: 'metric' }, `utilization ${(d.utilization * 100).toFixed(0)}%`),
      uc,
      h('div', { class: 'metric' }, `memory ${bytes(d.memoryUsed)} / ${bytes(d.memoryBytes)}`),
      mc,
    );
    requestAnimationFrame(() => {
      u.draw(uc, 1, '#2e9d6a');
      m.draw(mc, d.memoryBytes, '#6b7fd7');
    });
    return card;
  });
  box.replaceChildren(...cards);
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

function jobRow(j: Job): HTMLElement {
  return h(
    'tr',
    { 'data-job': j.id },
    h('td', {}, h('a', { href: `#/jobs/${j.id}` }, j.id)),
    h('td', {}, j.type),
    h('td', {}, j.tenant),
    h('td', {}, stateBadge(j.state)),
    h('td', {}, progressBar(j.progress)),
    h('td', {}, j.device ?? '–'),
    h('td', {}, secs(j.waitSeconds)),
    h('td', {}, secs(j.runSeconds)),
    h('td', {}, new Date(j.createdAt).toLocaleTimeString()),
  );
}

async function buildForm(box: HTMLElement): Promise<void> {
  let types: JobType[];
  try {
    types = (await api<{ types: JobType[] }>('GET', '/v1/job-types')).types;
  } catch (e) {
    box.replaceChildren(
      h('p', { class: 'error' }, e instanceof ApiError ? `${e.code}: ${e.message}` : String(e)),
    );
    return;
  }
  const select = h(
    'select',
    { id: 'job-type', name: 'type' },
    ...types.map((t) => h('option', { value: t.name }, t.name)),
  );
  const fields = h('div', { class: 'fields' });
  const priority = h('input', { id: 'job-priority', type: 'number', value: 0, min: -100, max: 100 });
  const out = h('div', { id: 'submit-result' });
  const render = (): void => {
    const t = types.find((x) => x.name === select.value);
    if (!t) return;
    fields.replaceChildren(
      h('p', { class: 'muted' }, t.description),
      ...Object.entries(t.params.properties ?? {}).map(([name, s]) => {
        const input = s.enum
          ? h(
              'select',
              { name },
              ...s.enum.map((v) => h('option', { value: String(v), selected: v === s.default }, String(v))),
            )
          : h('input', {
              name,
              type: s.type === 'integer' || s.type === 'number' ? 'number' : 'text',
              placeholder:
                s.default !== undefined
                  ? String(s.default)
                  : t.params.required?.includes(name)
                    ? 'required'
                    : 'optional',
              ...(s.minimum !== undefined ? { min: s.minimum } : {}),
              ...(s.maximum !== undefined ? { max: s.maximum } : {}),
            });
        input.setAttribute('data-param', name);
        input.setAttribute('data-kind', s.type ?? 'string');
        return h('label', {}, h('span', {}, name), input);
      }),
    );
  };
  select.addEventListener('change', render);
  render();
  const form = h(
    'form',
    { id: 'submit-form' },
    h('label', {}, h('span', {}, 'type'), select),
    fields,
    h('label', {}, h('span', {}, 'priority'), priority),
    h('button', { type: 'submit', id: 'submit-button' }, 'Submit'),
    out,
  );
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const params: Record<string, unknown> = {};
    for (const el of fields.querySelectorAll<HTMLInputElement | HTMLSelectElement>('[data-param]')) {
      if (el.value === '') continue;
      const kind = el.getAttribute('data-kind');
      params[el.getAttribute('data-param')!] =
        kind === 'integer' || kind === 'number' ? Number(el.value) : el.value;
    }
    api<Job>('POST', '/v1/jobs', { type: select.value, params, priority: Number(priority.value || 0) }).then(
      (job) =>
        out.replaceChildren('Submitted ', h('a', { href: `#/jobs/${job.id}`, id: 'submitted-link' }, job.id)),
      (e: unknown) =>
        out.replaceChildren(
          h('span', { class: 'error' }, e instanceof ApiError ? `${e.code}: ${e.message}` : String(e)),
        ),
    );
  });
  box.replaceChildren(form);
}
