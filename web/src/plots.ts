/** Small live line plots on canvas: one series per device, the last N samples. */
export class Series {
  private readonly values: number[] = [];
  constructor(private readonly capacity = 120) {}

  push(v: number): void {
    this.values.push(v);
    if (this.values.length > this.capacity) this.values.shift();
  }

  get last(): number {
    return this.values.at(-1) ?? 0;
  }

  draw(canvas: HTMLCanvasElement, max: number, color: string): void {
    const ctx = canvas.getContext('2d');
    if (!ctx) return;
    const dpr = window.devicePixelRatio || 1;
    const w = canvas.clientWidth;
    const h = canvas.clientHeight;
    if (canvas.width !== w * dpr) {
      canvas.width = w * dpr;
      canvas.height = h * dpr;
    }
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, w, h);
    ctx.strokeStyle = '#e3e6eb';
    ctx.lineWidth = 1;
    for (const f of [0.25, 0.5, 0.75]) {
      ctx.beginPath();
      ctx.moveTo(0, h - f * h);
      ctx.lineTo(w, h - f * h);
      ctx.stroke();
    }
    if (this.values.length < 2) return;
    const step = w / (this.capacity - 1);
    const x0 = w - (this.values.length - 1) * step;
    const y = (v: number): number => h - Math.min(1, v / (max || 1)) * (h - 2) - 1;
    ctx.beginPath();
    this.values.forEach((v, i) => (i === 0 ? ctx.moveTo(x0, y(v)) : ctx.lineTo(x0 + i * step, y(v))));
    ctx.strokeStyle = color;
    ctx.lineWidth = 1.5;
    ctx.stroke();
    ctx.lineTo(x0 + (this.values.length - 1) * step, h);
    ctx.lineTo(x0, h);
    ctx.closePath();
    ctx.fillStyle = `${color}22`;
    ctx.fill();
  }
}
