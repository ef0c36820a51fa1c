/** The submit form, built from the job types' parameter schemas (GET /v1/job-types). */
import { api, ApiError, type Job, type JobType } from './api.js';
import { h } from './dom.js';

export async function buildForm(box: HTMLElement): Promise<void> {
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
