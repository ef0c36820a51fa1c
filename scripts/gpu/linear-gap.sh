#!/usr/bin/env bash
# GPU call (issue 15): GPT-2's Linear passes through the runtime against PyTorch, by how kernels learn
# their completion (devices/cuda/completion.ts): an event after each kernel while few are outstanding
# (the default, "own") and one after a turn's kernels (TANDEM_CUDA_OWN_EVENTS=0, "turn").
# Fresh processes, uncalibrated (.tandem removed), ROUNDS times alternating; medians per pass. SEQ=1 adds
# `--mode sequence` (a pass's calls as one prepared sequence replayed as a CUDA graph), NCU=1 ncu's kernel
# durations of Tandem's passes (per-call time minus kernel time is the time between kernels).
# After `bash scripts/gpu/pack.sh` (carry: .gpu). The JSON lines come back as $OUT/linear-gap.tar.
set -uo pipefail
cd "$(dirname "$0")/../.."
rm -f node_modules
rm -rf .tandem
source scripts/gpu/env.sh
SHAPES=${SHAPES:-qkv}
nvidia-smi --query-gpu=name --format=csv,noheader
work=$(mktemp -d)
for i in $(seq 1 "${ROUNDS:-3}"); do
  timeout 60 python3 bench/torch/nn_linear.py --shapes "$SHAPES" > "$work/gap-torch-$i.jsonl" 2>&1
  timeout 60 node dist/bench/nn-linear.js --shapes "$SHAPES" > "$work/gap-own-$i.jsonl" 2>&1
  TANDEM_CUDA_OWN_EVENTS=0 timeout 60 node dist/bench/nn-linear.js --shapes "$SHAPES" > "$work/gap-turn-$i.jsonl" 2>&1
  if [ "${SEQ:-0}" = 1 ]; then
    timeout 60 node dist/bench/nn-linear.js --shapes "$SHAPES" --mode sequence > "$work/gap-seq-$i.jsonl" 2>&1
  fi
done
tar -cf "$OUT/linear-gap.tar" -C "$work" .
python3 - "$work" <<'PY'
import glob, json, statistics as st, sys
def load(side):
    r = {}
    for f in sorted(glob.glob(f"{sys.argv[1]}/gap-{side}-*.jsonl")):
        for l in open(f):
            if l.startswith("{"):
                j = json.loads(l); r.setdefault((j["shape"], j["pass"]), []).append(j["ms"])
    return r
sides = {s: load(s) for s in ("torch", "own", "turn", "seq")}
tot = {s: {} for s in sides}
for k in sides["turn"]:
    row = f"{k[0]:12} {k[1]:17}"
    for s, r in sides.items():
        if k in r:
            m = st.median(r[k]); row += f" {s} {m:.4f}"
            tot[s][k[0]] = tot[s].get(k[0], 0) + m
    print(row)
# PyTorch's training path: forward_training (linear, then GELU) where the shape has one, else forward.
t = sides["torch"]
for shape in tot["turn"]:
    fwd = (shape, "forward_training") if (shape, "forward_training") in t else (shape, "forward")
    ref = sum(st.median(t[k]) for k in (fwd, (shape, "backward_dx"), (shape, "backward_dw")) if k in t)
    print(f"{shape:12} fwd+bwd torch {ref:.4f} " + " ".join(
        f"{s} {tot[s][shape]:.4f} ({ref / tot[s][shape]:.3f}x)" for s in ("own", "turn", "seq") if shape in tot[s]))
PY
if [ "${NCU:-0}" = 1 ] && command -v ncu > /dev/null; then
  timeout 200 ncu --clock-control none --metrics gpu__time_duration.sum --csv \
    node dist/bench/nn-linear.js --shapes "${NCU_SHAPES:-qkv}" --reps 3 > "$OUT/gap-ncu.csv" 2> "$OUT/gap-ncu.err"
  echo "ncu rc=$?"
fi
