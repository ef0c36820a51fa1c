#!/usr/bin/env bash
# GPU call (issue 15): where the ~0.02-0.03 ms a Linear pass takes through the runtime beyond its kernel
# goes (bench/RESULTS.md, the twenty-fourth session). Fresh processes, uncalibrated (.tandem removed):
# PyTorch, then Tandem with an event per CUDA operation (the default), with a turn's operations
# sharing one (TANDEM_CUDA_OWN_EVENTS=0) and with each pass's calls as one prepared sequence (--mode
# sequence: one task, replayed as a CUDA graph, as a recorded training step runs), ROUNDS times
# alternating; medians per pass. Then ncu's kernel
# durations of Tandem's qkv passes (no gaps in them): per-call time minus kernel time is the time between
# kernels. After `bash scripts/gpu/pack.sh` (carry: .gpu).
set -uo pipefail
cd "$(dirname "$0")/../.."
rm -f node_modules
rm -rf .tandem
source scripts/gpu/env.sh
SHAPES=${SHAPES:-qkv}
nvidia-smi --query-gpu=name --format=csv,noheader
for i in $(seq 1 "${ROUNDS:-3}"); do
  timeout 60 python3 bench/torch/nn_linear.py --shapes "$SHAPES" > "$OUT/gap-torch-$i.jsonl" 2>&1
  timeout 60 node dist/bench/nn-linear.js --shapes "$SHAPES" > "$OUT/gap-own-$i.jsonl" 2>&1
  TANDEM_CUDA_OWN_EVENTS=0 timeout 60 node dist/bench/nn-linear.js --shapes "$SHAPES" > "$OUT/gap-shared-$i.jsonl" 2>&1
  timeout 60 node dist/bench/nn-linear.js --shapes "$SHAPES" --mode sequence > "$OUT/gap-seq-$i.jsonl" 2>&1
done
python3 - "$OUT" <<'PY'
import glob, json, statistics as st, sys
def load(side):
    r = {}
    for f in sorted(glob.glob(f"{sys.argv[1]}/gap-{side}-*.jsonl")):
        for l in open(f):
            if l.startswith("{"):
                j = json.loads(l); r.setdefault((j["shape"], j["pass"]), []).append(j["ms"])
    return r
t, own, shared, seq = load("torch"), load("own"), load("shared"), load("seq")
for k in own:
    if k in t and k in shared and k in seq:
        print(f"{k[0]:12} {k[1]:12} torch {st.median(t[k]):.4f}  own events {st.median(own[k]):.4f}  shared {st.median(shared[k]):.4f}  sequence {st.median(seq[k]):.4f}")
PY
if command -v ncu > /dev/null; then
  timeout 200 ncu --clock-control none --metrics gpu__time_duration.sum --csv \
    node dist/bench/nn-linear.js --shapes "$SHAPES" --reps 3 > "$OUT/gap-ncu.csv" 2> "$OUT/gap-ncu.err"
  echo "ncu rc=$?"
  python3 - "$OUT/gap-ncu.csv" <<'PY'
import csv, sys, collections
rows = [r for r in csv.reader(l for l in open(sys.argv[1]) if l.startswith('"'))]
head = rows[0]; ki, vi, ui = head.index("Kernel Name"), head.index("Metric Value"), head.index("Metric Unit")
to_ms = {"nsecond": 1e-6, "ns": 1e-6, "usecond": 1e-3, "us": 1e-3, "msecond": 1.0, "ms": 1.0}
d = collections.defaultdict(list)
for r in rows[1:]:
    d[r[ki][:60]].append(float(r[vi].replace(",", "")) * to_ms.get(r[ui], float("nan")))
for k, v in d.items():
    print(f"{len(v):4}x median {sorted(v)[len(v) // 2]:.4f} ms  {k}")
PY
fi
