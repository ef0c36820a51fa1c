#!/usr/bin/env bash
# GPU call: bf16 Linear at GPT-2's shapes (issue 15, B.1) beside PyTorch in the same call (before and
# after Tandem's passes, the faster of the two taken), under A/B
# settings given as "NAME=value ..." words in LINEAR_AB (default: the build's defaults, then
# TANDEM_LT_AUTOTUNE=0, then TANDEM_LINEAR_DW_FUSED=1), each pass's time and its ratio to PyTorch's,
# and the forward+backward sum per shape; with TRAIN=1 also GPT-2 124M bf16 B=64 recorded steps under each
# setting beside torch.compile (bench/torch/gpt2_train.py). After `bash scripts/gpu/pack.sh` (carry: .gpu).
set -uo pipefail
cd "$(dirname "$0")/../.."
rm -f node_modules
source scripts/gpu/env.sh
PY=${PY:-python3}
timeout 100 $PY bench/torch/nn_linear.py --reps 20 > "$OUT/linear-torch.jsonl" 2>&1
echo "torch linear rc=$?"
i=0
files=()
while IFS= read -r setting; do
  env $setting timeout 120 node dist/bench/nn-linear.js --reps 20 > "$OUT/linear-$i.jsonl" 2>&1
  echo "tandem linear [$setting] rc=$?"
  files+=("$OUT/linear-$i.jsonl:$setting")
  i=$((i + 1))
done <<< "${LINEAR_AB:-X=default
TANDEM_LT_AUTOTUNE=0
TANDEM_LINEAR_DW_FUSED=1}"
# PyTorch again after Tandem's passes: a GPU's clocks drift over a call (fresh H100s differed by 7 %), so
# each PyTorch time is the faster of its two runs, the one before and the one after.
timeout 100 $PY bench/torch/nn_linear.py --reps 20 > "$OUT/linear-torch-after.jsonl" 2>&1
echo "torch linear (after) rc=$?"
python3 - "$OUT/linear-torch.jsonl" "$OUT/linear-torch-after.jsonl" "${files[@]}" <<'PY'
import json, sys
def rows(f):
    r = {}
    for l in open(f):
        if l.startswith("{"):
            j = json.loads(l); r[(j["shape"], j["pass"])] = j["ms"]
    return r
t0, t1 = rows(sys.argv[1]), rows(sys.argv[2])
print("torch before/after drift: " + " ".join(f"{k[0]}/{k[1]} {t1[k] / t0[k]:.3f}" for k in t0 if k in t1))
t = {k: min(v, t1.get(k, v)) for k, v in t0.items()}
sys.argv = sys.argv[:1] + sys.argv[2:]
runs = [(a.split(":", 1)[1], rows(a.split(":", 1)[0])) for a in sys.argv[2:]]
print("shape        pass         torch   " + "  ".join(f"{name[:24]:>24s}" for name, _ in runs))
for k in t:
    print(f"{k[0]:12s} {k[1]:12s} {t[k]:.4f}  " + "  ".join(f"{r.get(k, float('nan')):.4f} ({t[k] / r[k] if k in r else float('nan'):.2f}x)".rjust(24) for _, r in runs))
for (shape, p), v in t.items():
    if p == "forward_training":  # Tandem's (training) forward against PyTorch's training forward
        print(f"{shape:12s} fwd (train)  {v:.4f}  " + "  ".join(f"{r[(shape, 'forward')]:.4f} ({v / r[(shape, 'forward')]:.2f}x)".rjust(24) for _, r in runs if (shape, "forward") in r))
# fwd+bwd: the inference-fused forward (as before); "train" below with PyTorch's training forward.
for shape in dict.fromkeys(s for s, _ in t):
    if (shape, "forward_training") in t:
        ts = sum(v for (s, p), v in t.items() if s == shape and p != "forward")
        print(f"{shape:12s} f+b (train)  {ts:.4f}  " + "  ".join(f"{sum(v for (s, _), v in r.items() if s == shape):.4f} ({ts / max(1e-9, sum(v for (s, _), v in r.items() if s == shape)):.2f}x)".rjust(24) for _, r in runs))
    ts = sum(v for (s, p), v in t.items() if s == shape and p != "forward_training")
    print(f"{shape:12s} fwd+bwd      {ts:.4f}  " + "  ".join(f"{sum(v for (s, _), v in r.items() if s == shape):.4f} ({ts / max(1e-9, sum(v for (s, _), v in r.items() if s == shape)):.2f}x)".rjust(24) for _, r in runs))
PY
if [ "${TRAIN:-0}" = 1 ]; then
  timeout 150 $PY bench/torch/gpt2_train.py 64,1,1 > "$OUT/train-torch-compile.txt" 2>&1
  echo "gpt2 torch.compile B=64 rc=$?: $(grep -o '"tokensPerSecond": [0-9.]*' "$OUT/train-torch-compile.txt" | tail -1)"
  i=0
  while IFS= read -r setting; do
    env $setting timeout 120 node dist/bench/nn-gpt2.js --batch 64 --steps 15 --static on > "$OUT/train-$i.jsonl" 2>&1
    echo "gpt2 B=64 static [$setting] rc=$?: $(grep -o '"tokensPerSecond":[0-9.]*' "$OUT/train-$i.jsonl" | tail -1)"
    i=$((i + 1))
  done <<< "${LINEAR_AB:-X=default
TANDEM_LT_AUTOTUNE=0
TANDEM_LINEAR_DW_FUSED=1}"
fi
