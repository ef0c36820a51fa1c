#!/usr/bin/env bash
# One H200 call for the attention lab (README.md): the variants beside SDPA (each backend forced too),
# then Nsight Compute on the baseline and the first variants (where the machine's runtime lets ncu read
# counters), and a SASS opcode histogram of each kernel. Needs gen-base.mjs's outputs (carry them).
#   bash bench/attention-lab/run.sh        (from the repository root; results under $OUT)
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-/tmp/attention-lab}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
timeout 240 python3 lab.py --reps 20 2>&1 | tee "$OUT/lab.jsonl"
for k in $(python3 -c "import json;print(' '.join(v['name'] for v in json.load(open('variants.json'))))"); do
  f=$(python3 -c "import json;print(next(v['file'] for v in json.load(open('variants.json')) if v['name']=='$k'))")
  nvcc -arch=sm_90 -cubin -o "/tmp/$k.cubin" -DHD=64 -DIS_BF16=1 -std=c++17 -x cu "$f" && cuobjdump -sass "/tmp/$k.cubin" > "$OUT/$k.sass"
  # Opcode counts (the main loop's mix: HMMA, LDSM/LDS, MUFU, FFMA ...).
  grep -oE '^\s+/\*[0-9a-f]{4}\*/\s+[^ ;]+( [^ ;]+)?' "$OUT/$k.sass" | awk '{op=$2; if (op ~ /^@/) op=$3; split(op,a,"."); print a[1]}' |
    sort | uniq -c | sort -rn | head -25 > "$OUT/$k.hist"
done
head -20 "$OUT/fwd0.hist"
timeout 200 ncu --clock-control none --kernel-name regex:tdm_attn --launch-count 4 --section SpeedOfLight \
  --section WarpStateStats --section Occupancy --section ComputeWorkloadAnalysis --section InstructionStats \
  --section SchedulerStats python3 lab.py --only fwd0,fwd1,dkdv0,dq0 --reps 1 --no-torch > "$OUT/ncu.txt" 2>&1
echo "ncu rc=$?"
grep -E "tdm_attn|Duration|Throughput|Warp Cycles|Issue Slot|Eligible|Achieved Occ|Stall|No Eligible|One or More" "$OUT/ncu.txt" | head -80
