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
  const axisH = 22;
  const h = Math.max(60, rows.length * rowH + 8 + axisH);
  canvas.style.height = `${h}px`;
  canvas.width = w * dpr;
  canvas.height = h * dpr;
  const ctx = canvas.getContext('2d')!;
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, w, h);
  // What is drawn, for tests and tools (a canvas has no DOM to query).
  canvas.dataset['spans'] = String(spans.length);
  canvas.dataset['tracks'] = [...new Set(spans.map((e) => names.get(e.tid) ?? `track ${e.tid}`))].join('|');
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
    // The job's own track is "job <id>": the id is in the page's title already.
    const track = (names.get(tid) ?? `track ${tid}`).replace(/^job job_\w+$/, 'job');
    if (depth === 0) ctx.fillText(fit(ctx, track, labelW - 12), 6, y + 15);
    for (const e of spans.filter((s) => rowOf.get(s) === key)) {
      const x = labelW + (e.ts - t0) * scale;
      const bw = Math.max(2, (e.dur ?? 0) * scale);
      const cat = e.cat.includes('failed') ? 'failed' : e.cat;
      ctx.fillStyle = COLORS[cat] ?? '#888';
      ctx.fillRect(x, y + 2, bw, rowH - 8);
      if (bw > 24) {
        ctx.fillStyle = '#fff';
        ctx.fillText(fit(ctx, e.name, bw - 6), x + 3, y + 15);
      }
      boxes.push({ x, y, w: bw, e });
    }
  });
  drawAxis(ctx, labelW, w - 10, h - axisH, t1 - t0);
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

/** A time axis under the tracks: ticks at a round step (1, 2 or 5 × 10^k µs), labelled in ms or s. */
function drawAxis(ctx: CanvasRenderingContext2D, x0: number, x1: number, y: number, spanUs: number): void {
  const scale = (x1 - x0) / Math.max(1, spanUs);
  const raw = Math.max(1, spanUs / Math.max(2, Math.floor((x1 - x0) / 90)));
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? 10 * mag;
  ctx.strokeStyle = '#c9ced6';
  ctx.beginPath();
  ctx.moveTo(x0, y + 2);
  ctx.lineTo(x1, y + 2);
  ctx.stroke();
  ctx.fillStyle = '#555';
  ctx.textAlign = 'center';
  for (let t = 0; t <= spanUs + 1e-9; t += step) {
    const x = x0 + t * scale;
    ctx.beginPath();
    ctx.moveTo(x, y + 2);
    ctx.lineTo(x, y + 6);
    ctx.stroke();
    const label =
      spanUs >= 2e6
        ? `${(t / 1e6).toFixed(step >= 1e6 ? 0 : 1)} s`
        : `${(t / 1e3).toFixed(step >= 1e3 ? 0 : 2)} ms`;
    ctx.fillText(label, x, y + 18);
  }
  ctx.textAlign = 'start';
}

/** `text`, cut with an ellipsis to at most `maxW` pixels wide. */
function fit(ctx: CanvasRenderingContext2D, text: string, maxW: number): string {
  if (ctx.measureText(text).width <= maxW) return text;
  let n = text.length;
  while (n > 1 && ctx.measureText(`${text.slice(0, n)}…`).width > maxW) n--;
  return n > 1 ? `${text.slice(0, n)}…` : '';
}
