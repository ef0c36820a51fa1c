/**
 * The jobs list: filters (state, type, and tenant for admins) and paging through the API's cursor
 * (`next` → ?before=), with the total of matching jobs. The current page refreshes every poll.
 */
import { api, type Job, type JobList, type JobType, type WhoAmI } from './api.js';
import { h, progressBar, secs, stateBadge } from './dom.js';

const STATES = ['queued', 'running', 'succeeded', 'failed', 'cancelled'];
const PAGE = 20;
const COLUMNS = ['Job', 'Type', 'Tenant', 'State', 'Progress', 'Device', 'Wait', 'Run', 'Submitted'];

export class JobsList {
  readonly element: HTMLElement;
  private readonly body = h('tbody', { id: 'jobs-body' });
  private readonly pageInfo = h('span', { id: 'jobs-page', class: 'muted' });
  private readonly newer = h('button', { id: 'jobs-newer', type: 'button', class: 'secondary' }, '← Newer');
  private readonly older = h('button', { id: 'jobs-older', type: 'button', class: 'secondary' }, 'Older →');
  private readonly state = select('filter-state', 'all states', STATES);
  private readonly type = select('filter-type', 'all types', []);
  private readonly tenant = select('filter-tenant', 'all tenants', []);
  /** Cursors of the pages before the current one; the current page's cursor is `cursor`. */
  private readonly back: (string | undefined)[] = [];
  private cursor: string | undefined;
  private next: string | null = null;
  /** Bumped on every filter or page change: an answer to an older request is dropped. */
  private generation = 0;
  private polls = 0;
  /**
   * The last total the API counted: for which filters and page (`generation`), when, and what the page
   * showed then (its first job and length: when that changes, jobs came or went).
   */
  private counted: { generation: number; at: number; shown: string; total: number; exact: boolean } | null =
    null;
  /** What the page showed at the last poll. */
  private shown = '';
  private readonly tenantLabel = h('label', { id: 'filter-tenant-box', hidden: true }, 'tenant ');

  constructor(private readonly onChange: () => void) {
    this.tenantLabel.append(this.tenant);
    this.element = h(
      'section',
      {},
      h(
        'div',
        { class: 'list-head' },
        h('h2', {}, 'Jobs'),
        h('label', {}, 'state ', this.state),
        h('label', {}, 'type ', this.type),
        this.tenantLabel,
        h('span', { class: 'spacer' }),
        this.pageInfo,
        this.newer,
        this.older,
      ),
      h(
        'table',
        { class: 'jobs' },
        h('thead', {}, h('tr', {}, ...COLUMNS.map((t) => h('th', {}, t)))),
        this.body,
      ),
    );
    for (const s of [this.state, this.type, this.tenant])
      s.addEventListener('change', () => this.go(undefined, true));
    this.newer.addEventListener('click', () => this.go(this.back.pop(), false));
    this.older.addEventListener('click', () => {
      if (this.next === null) return;
      this.back.push(this.cursor);
      this.go(this.next, false);
    });
    void this.loadChoices();
  }

  /** Fetches the current page (filters and cursor as chosen) and shows it. */
  async refresh(): Promise<void> {
    // New tenants and job types appear in the filters within a few polls.
    if (++this.polls % 15 === 0) void this.loadChoices();
    const gen = this.generation;
    const q = new URLSearchParams({ limit: String(PAGE) });
    if (this.state.value) q.set('state', this.state.value);
    if (this.type.value) q.set('type', this.type.value);
    if (this.tenant.value) q.set('tenant', this.tenant.value);
    if (this.cursor !== undefined) q.set('before', this.cursor);
    // Counting can scan the table: asked for when the filters or the page change, and now and then.
    const c = this.counted;
    const age = c ? Date.now() - c.at : Infinity;
    const count = c?.generation !== gen || age > 15_000 || (c.shown !== this.shown && age > 3000);
    if (count) q.set('total', 'true');
    const list = await api<JobList>('GET', `/v1/jobs?${q.toString()}`);
    if (gen !== this.generation) return;
    if (count && list.total !== undefined)
      this.counted = {
        generation: gen,
        at: Date.now(),
        shown: signature(list),
        total: list.total,
        exact: list.totalExact ?? true,
      };
    this.shown = signature(list);
    this.next = list.next;
    this.body.replaceChildren(
      ...(list.jobs.length
        ? list.jobs.map(jobRow)
        : [h('tr', {}, h('td', { colspan: COLUMNS.length, class: 'muted' }, 'No jobs match.'))]),
    );
    const first = this.back.length * PAGE;
    const counted = this.counted ?? { total: 0, exact: true };
    // A total counted a few seconds ago can be behind the page it labels: never show fewer than shown.
    const known = Math.max(counted.total, first + list.jobs.length);
    const total = `${known}${counted.exact ? '' : '+'}`;
    this.pageInfo.textContent = list.jobs.length
      ? `${first + 1}–${first + list.jobs.length} of ${total}`
      : `0 of ${total}`;
    this.newer.disabled = this.back.length === 0;
    // A full last page still gets a cursor; the total says whether anything lies beyond it.
    this.older.disabled = list.next === null || (counted.exact && first + list.jobs.length >= known);
  }

  showError(message: string): void {
    this.body.replaceChildren(h('tr', {}, h('td', { colspan: COLUMNS.length, class: 'error' }, message)));
  }

  private go(cursor: string | undefined, reset: boolean): void {
    if (reset) this.back.length = 0;
    this.cursor = cursor;
    this.generation++;
    this.onChange();
  }

  private async loadChoices(): Promise<void> {
    const [types, me] = await Promise.all([
      api<{ types: JobType[] }>('GET', '/v1/job-types').catch(() => null),
      api<WhoAmI>('GET', '/v1/whoami').catch(() => null),
    ]);
    if (types)
      setOptions(
        this.type,
        types.types.map((t) => t.name),
      );
    if (me?.role !== 'admin') return;
    const tenants = await api<{ tenants: { name: string }[] }>('GET', '/v1/tenants').catch(() => null);
    if (!tenants) return;
    setOptions(
      this.tenant,
      tenants.tenants.map((t) => t.name),
    );
    this.tenantLabel.hidden = false;
  }
}

/** Replaces a filter's choices after its first ("all"), keeping the chosen one. */
function setOptions(sel: HTMLSelectElement, values: string[]): void {
  const chosen = sel.value;
  const all = sel.options[0]!;
  sel.replaceChildren(all, ...values.map((v) => h('option', { value: v }, v)));
  sel.value = values.includes(chosen) ? chosen : '';
}

/** The page's first job and length: changes when jobs come or go. */
const signature = (list: JobList): string => `${list.jobs[0]?.id ?? ''}:${list.jobs.length}`;

function select(id: string, all: string, values: string[]): HTMLSelectElement {
  return h(
    'select',
    { id },
    h('option', { value: '' }, all),
    ...values.map((v) => h('option', { value: v }, v)),
  );
}

function jobRow(j: Job): HTMLElement {
  const cancelling = j.state === 'running' && j.cancelRequested;
  return h(
    'tr',
    { 'data-job': j.id, 'data-state': j.state },
    h('td', {}, h('a', { href: `#/jobs/${j.id}` }, j.id)),
    h('td', {}, j.type),
    h('td', {}, j.tenant),
    h('td', {}, stateBadge(j.state), cancelling ? h('span', { class: 'muted' }, ' cancelling…') : null),
    h('td', {}, progressBar(j.progress)),
    h('td', { class: 'device-cell' }, j.device ?? '–'),
    h('td', {}, secs(j.waitSeconds)),
    h('td', {}, secs(j.runSeconds)),
    h('td', {}, new Date(j.createdAt).toLocaleTimeString()),
  );
}
