# Per-kernel device time from Nsight Compute's raw CSV (ncu --csv --page raw --metrics
# gpu__time_duration.sum), or torch.profiler's JSON lines (.jsonl, already per step): each kernel name's launches, total and mean microseconds, and the share of the
# profiled time, largest first. Two files side by side (e.g. Tandem's and PyTorch's forward) when given:
#   python3 bench/py/kernel_times.py tandem.csv [torch.csv] [--passes N,M] [--top 30]
# --passes divides totals by the number of identical passes each program ran (per-pass time).
import csv, json, sys
def load_jsonl(path):
    # torch.profiler's per-kernel lines (bench/torch/gpt2_train.py KERNEL_PROFILE): already per step.
    out = {}
    for line in open(path):
        if not line.startswith('{"kernel"'): continue
        r = json.loads(line)
        out[r['kernel']] = [r['launchesPerStep'], r['usPerStep']]
    return out
def load(path):
    if path.endswith('.jsonl'): return load_jsonl(path)
    rows = list(csv.reader(line for line in open(path, errors='replace') if line.startswith('"')))
    if not rows: return {}
    head = rows[0]
    name, dur = head.index('Kernel Name'), head.index('gpu__time_duration.sum')
    unit = rows[1][dur] if len(rows) > 1 else 'nsecond'
    scale = {'nsecond': 1e-3, 'usecond': 1.0, 'msecond': 1e3}.get(unit, 1e-3)
    out = {}
    for r in rows[1:]:
        try: us = float(r[dur].replace(',', '')) * scale
        except (ValueError, IndexError): continue
        k = r[name][:90]
        t = out.setdefault(k, [0, 0.0]); t[0] += 1; t[1] += us
    return out
args = [a for a in sys.argv[1:] if not a.startswith('--')]
opt = dict(zip(sys.argv[1::2], sys.argv[2::2]))
passes = [float(p) for p in opt.get('--passes', '1,1').split(',')]
top = int(opt.get('--top', '30'))
for i, path in enumerate(a for a in args if a.endswith(('.csv', '.jsonl'))):
    k = load(path); p = passes[min(i, len(passes) - 1)]
    total = sum(t for _, t in k.values())
    print(f'== {path}: {sum(c for c, _ in k.values())} launches, {total / p:.1f} us per pass ({p:g} passes)')
    for n, (c, t) in sorted(k.items(), key=lambda e: -e[1][1])[:top]:
        print(f'{t / p:9.1f} us/pass {c / p:6.1f} launches/pass {t / c:8.2f} us each {100 * t / total:5.1f}%  {n}')
    print(json.dumps({'file': path, 'usPerPass': total / p}))
