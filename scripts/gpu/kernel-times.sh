#!/usr/bin/env bash
# H200 call: device time per kernel of the GPT-2 124M scoring forward (bf16, 128 tokens, batch 64: B.7's
# c64 figure is bound by this forward), Tandem's beside PyTorch's, both read by Nsight Compute with one
# metric (gpu__time_duration.sum, clocks left alone) and summed per kernel name by bench/py/kernel_times.py.
# After `bash scripts/gpu/pack.sh` (carry: .gpu). BATCH sets the batch (default 64).
#   scripts/gpu/kernel-times.sh [score] [train]        (default: score)
# train: the GPT-2 124M bf16 training step at batch 64 (issue 15's B.3), Tandem's kernels under ncu (the
# recorded step replayed; 4 steps), PyTorch's torch.compile step under torch.profiler (2 steps after its
# timed run).
set -uo pipefail
cd "$(dirname "$0")/../.."
rm -f node_modules
source scripts/gpu/env.sh
B=${BATCH:-64}
steps=" ${*:-score} "
NCU="ncu --clock-control none --metrics gpu__time_duration.sum --csv --page raw"
if [[ $steps == *" score "* ]]; then
# Tandem: 5 warm-up passes and --reps 2 timed ones = 7 identical passes (plus the model's seeded init).
timeout 240 $NCU node dist/bench/gpt-score.js --batches $B --reps 2 > "$OUT/ncu-tandem.csv" 2> "$OUT/ncu-tandem.err"
echo "tandem ncu rc=$?"
# PyTorch: 3 warm-up passes and one = 4 ('last' head).
timeout 200 $NCU python3 bench/torch/gpt2_infer.py $B --once > "$OUT/ncu-torch.csv" 2> "$OUT/ncu-torch.err"
echo "torch ncu rc=$?"
python3 bench/py/kernel_times.py "$OUT/ncu-tandem.csv" "$OUT/ncu-torch.csv" --passes 7,4 --top ${TOP:-28} | tee "$OUT/kernel-times.txt"
fi
if [[ $steps == *" train "* ]]; then
timeout 300 $NCU node dist/bench/nn-gpt2.js --batch 64 --steps 4 > "$OUT/ncu-train-tandem.csv" 2> "$OUT/ncu-train-tandem.err"
echo "tandem train ncu rc=$?"
KERNEL_PROFILE=2 timeout 200 python3 bench/torch/gpt2_train.py 64,1,1 > "$OUT/torch-train-kernels.jsonl" 2> "$OUT/torch-train.err"
echo "torch train profile rc=$?"; grep '"side"' "$OUT/torch-train-kernels.jsonl"
python3 bench/py/kernel_times.py "$OUT/ncu-train-tandem.csv" "$OUT/torch-train-kernels.jsonl" --passes 4,1 --top ${TOP:-40} | tee "$OUT/kernel-times-train.txt"
fi
