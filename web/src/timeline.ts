/**
 * Draws a job's Chrome trace as a timeline: one row per track (the job's own spans, each execution
 * queue, each copy engine), a bar per span, coloured by category. Hovering shows a span's details.
 */
import type { TraceEvent } from './api.js';

const COLORS: Record<string, string> = {
  job: '#6b7fd7',
  task: '#2e9d6a',
  transfer: '#d08a2c',
  failed: '#c8463d',
};

export function drawTimeline(canvas: HTMLCanvasElement, events: TraceEvent[], info: HTMLElement): void {
  const names = new Map<number, string>();
  for (const e of events)
    if (e.ph === 'M' && e.name === 'thread_name') names.set(e.tid, String(e.args?.['name'] ?? e.tid));
  const spans = events
    .filter((e) => e.ph === 'X')
    .sort((a, b) => a.tid - b.tid || a.ts - b.ts || (b.dur ?? 0) - (a.dur ?? 0));
  // Nested spans (a check inside the run) go one sub-row down, as in Perfetto.
  const rowOf = new Map<TraceEvent, string>();
  const stacks = new Map<number, number[]>();
  for (const e of spans) {
    const stack = (stacks.get(e.tid) ?? []).filter((end) => end > e.ts);
    rowOf.set(e, `${e.tid}:${stack.length}`);
    stack.push(e.ts + (e.dur ?? 0));
    stacks.set(e.tid, stack);
  }
  const rows = [...new Set(rowOf.values())].sort((a, b) => {
    const [ta, da] = a.split(':').map(Number) as [number, number];
    const [tb, db] = b.split(':').map(Number) as [number, number];
    return ta - tb || da - db;
  });
  const rowH = 26;
  const labelW = 170;
  const dpr = window.devicePixelRatio || 1;
  const w = canvas.clientWidth;
  const h = Math.max(60, rows.length * rowH + 24);
  canvas.style.height = `${h}px`;
  canvas.width = w * dpr;
  canvas.height = h * dpr;
  const ctx = canvas.getContext('2d')!;
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, w, h);
  if (spans.length === 0) {
    ctx.fillStyle = '#777';
    ctx.fillText('no events yet', 8, 20);
    return;
  }
  const t0 = Math.min(...spans.map((e) => e.ts));
  const t1 = Math.max(...spans.map((e) => e.ts + (e.dur ?? 0)));
  const scale = (w - labelW - 10) / Math.max(1, t1 - t0);
  const boxes: { x: number; y: number; w: number; e: TraceEvent }[] = [];
  ctx.font = '12px system-ui, sans-serif';
  rows.forEach((key, row) => {
    const [tid, depth] = key.split(':').map(Number) as [number, number];
    const y = row * rowH + 4;
    ctx.fillStyle = tid % 2 ? '#f6f7f9' : '#fff';
    ctx.fillRect(0, y - 2, w, rowH);
    ctx.fillStyle = '#333';
    if (depth === 0) ctx.fillText((names.get(tid) ?? `track ${tid}`).slice(0, 24), 6, y + 15);
    for (const e of spans.filter((s) => rowOf.get(s) === key)) {
      const x = labelW + (e.ts - t0) * scale;
      const bw = Math.max(2, (e.dur ?? 0) * scale);
      const cat = e.cat.includes('failed') ? 'failed' : e.cat;
      ctx.fillStyle = COLORS[cat] ?? '#888';
      ctx.fillRect(x, y + 2, bw, rowH - 8);
      if (bw > 40) {
        ctx.fillStyle = '#fff';
        ctx.fillText(e.name.slice(0, Math.floor(bw / 7)), x + 3, y + 15);
      }
      boxes.push({ x, y, w: bw, e });
    }
  });
  ctx.fillStyle = '#555';
  ctx.fillText(`${((t1 - t0) / 1000).toFixed(1)} ms`, w - 70, h - 6);
  canvas.onmousemove = (ev) => {
    const r = canvas.getBoundingClientRect();
    const mx = ev.clientX - r.left;
    const my = ev.clientY - r.top;
    const hit = boxes.find((b) => mx >= b.x && mx <= b.x + b.w && my >= b.y && my <= b.y + rowH);
    info.textContent = hit
      ? `${hit.e.name} — ${((hit.e.dur ?? 0) / 1000).toFixed(3)} ms at +${((hit.e.ts - t0) / 1000).toFixed(3)} ms ${JSON.stringify(hit.e.args ?? {})}`
      : '';
  };
}
