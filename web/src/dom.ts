/** A tiny element builder: h('div', { class: 'x' }, child, 'text'). */
type Child = Node | string | number | null | undefined | false;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | number | boolean | ((e: Event) => void)> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (typeof v === 'function') el.addEventListener(k.replace(/^on/, ''), v);
    else if (v === true) el.setAttribute(k, '');
    else if (v !== false) el.setAttribute(k, String(v));
  }
  for (const c of children)
    if (c !== null && c !== undefined && c !== false) el.append(typeof c === 'number' ? String(c) : c);
  return el;
}

export function bytes(n: number): string {
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) {
    n /= 1024;
    i++;
  }
  return `${n.toFixed(i ? 1 : 0)} ${u[i]}`;
}

export const secs = (v: number | null): string =>
  v === null ? '–' : v < 1 ? `${(v * 1000).toFixed(0)} ms` : `${v.toFixed(2)} s`;

export function stateBadge(state: string): HTMLElement {
  return h('span', { class: `badge ${state}`, 'data-state': state }, state);
}

export function progressBar(p: number): HTMLElement {
  const bar = h(
    'div',
    { class: 'progress', title: `${(p * 100).toFixed(0)}%` },
    h('div', { style: `width:${(p * 100).toFixed(1)}%` }),
  );
  return bar;
}
