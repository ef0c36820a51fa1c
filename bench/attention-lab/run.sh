#!/usr/bin/env bash
# One H200 call for the attention lab (README.md): the variants beside SDPA (each backend forced too),
# then Nsight Compute on the baseline and the first variants (where the machine's runtime lets ncu read
# counters), and a SASS opcode histogram of each kernel. Needs gen-base.mjs's outputs: made here when a
# carried .gpu (scripts/gpu/pack.sh) gives Node and dist/, else carry them.
#   bash bench/attention-lab/run.sh        (from the repository root; results under $OUT)
set -uo pipefail
cd "$(dirname "$0")"
if [ -f ../../.gpu/node.xz ]; then
  (cd ../.. && source scripts/gpu/env.sh && node bench/attention-lab/gen-base.mjs) || echo "gen-base failed"
fi
OUT=${OUT:-/tmp/attention-lab}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
timeout 270 python3 lab.py --reps 20 2>&1 | tee "$OUT/lab.jsonl"
# One line per variant: name, file, entry, flags (fwd2k64 is fwd2.cu with -DKN=64; bwd2's aux kernels
# share its file, so the histogram is of the named entry only).
python3 -c "import json
for v in json.load(open('variants.json')): print(v['name'], v['file'], v['entry'], ' '.join(v.get('flags', [])), sep='\t')" |
while IFS=$'\t' read -r k f e fl; do
  nvcc -arch=sm_90 -cubin -o "/tmp/$k.cubin" -DHD=64 -DIS_BF16=1 $fl -std=c++17 -x cu "$f" &&
    cuobjdump -sass -fun "$e" "/tmp/$k.cubin" > "$OUT/$k.sass"
  # Opcode counts (the main loop's mix: HMMA, LDSM/LDS, MUFU, FFMA ...).
  grep -oE '^\s+/\*[0-9a-f]{4}\*/\s+[^ ;]+( [^ ;]+)?' "$OUT/$k.sass" | awk '{op=$2; if (op ~ /^@/) op=$3; split(op,a,"."); print a[1]}' |
    sort | uniq -c | sort -rn | head -25 > "$OUT/$k.hist"
done
head -20 "$OUT/fwd0.hist"
# Nsight Compute, one kernel launch per variant (the first, the checked one): every forward variant
# has the same entry name, so each gets its own run; a backward variant needs a forward (fwd0) first.
for k in fwd1 fwd2 fwd3 bwd2 bwd3; do
  case $k in fwd*) only=$k; kn=regex:tdm_attn_fwd ;; *) only=fwd0,$k; kn=regex:tdm_attn_bwd_mma ;; esac
  timeout 45 ncu --clock-control none --kernel-name $kn --launch-count 1 --section SpeedOfLight \
    --section WarpStateStats --section Occupancy --section ComputeWorkloadAnalysis --section InstructionStats \
    --section SchedulerStats --section MemoryWorkloadAnalysis python3 lab.py --only $only --reps 1 --no-torch --b 8 > "$OUT/ncu-$k.txt" 2>&1
  echo "ncu $k rc=$?"
  grep -E "tdm_attn|Duration|Throughput|Warp Cycles|Issue Slot|Eligible|Achieved Occ|Stall|No Eligible|One or More|Registers|Shared Memory Config" "$OUT/ncu-$k.txt" | head -40
done
