#!/usr/bin/env bash
# H200 call: where the interactive lane's server time goes (issues 16 and 17), after `bash scripts/gpu/pack.sh`
# (carry: .gpu). Runs the lane benches under V8's sampling profiler (1 ms interval) and writes the
# .cpuprofile files (one per thread: the server's main thread and the load worker) under $OUT/prof-*:
#   ocr   the PaddleOCR detector at c1/c16 batching on and off (serve-lane.ts ocr, 640x640)
#   gpt   GPT-2 124M scoring at c64, batching on with delay 0 only (GPT_LANE_VARIANTS / GPT_LANE_LEVELS)
#   score in-process scoring forward (bench/gpt-score.ts) beside bench/torch/gpt2_infer.py, batch 1/16/64
#   scripts/gpu/lane-prof.sh [ocr] [gpt] [score]      (default: all three)
set -uo pipefail
cd "$(dirname "$0")/../.."
rm -f node_modules
source scripts/gpu/env.sh
steps=" ${*:-ocr gpt score} "
NODE="node --max-semi-space-size=16 --min-semi-space-size=16 --cpu-prof-interval 1000"
if [[ $steps == *" ocr "* ]]; then
  # OCR_FORMATS: the body formats to run (binary float32 tensors, base64 in JSON, u8: uint8 pixels
  # normalized on the device by the preprocess config); the first is profiled. E.g. OCR_FORMATS="binary u8".
  prof=${OCR_PROF-"--cpu-prof --cpu-prof-dir $OUT/prof-ocr"}
  for fmt in ${OCR_FORMATS:-binary u8}; do
    timeout 240 $NODE $prof dist/bench/serve-lane.js ocr --device cuda --seconds 3 --ocr-format $fmt \
      --assets .gpu/ocr > "$OUT/lane-ocr-$fmt.txt" 2>&1
    echo "ocr $fmt rc=$?"; grep -E 'in-process|c16|c1:|OCR det' "$OUT/lane-ocr-$fmt.txt" | cut -c1-500
    prof=""
  done
fi
if [[ $steps == *" gpt "* ]]; then
  GPT_LANE_VARIANTS=gpt-d0 GPT_LANE_LEVELS=64 timeout 240 $NODE --cpu-prof --cpu-prof-dir "$OUT/prof-gpt" \
    dist/bench/serve-lane.js gpt --device cuda --seconds 5 > "$OUT/lane-gpt.txt" 2>&1
  echo "gpt rc=$?"; grep -E 'c64' "$OUT/lane-gpt.txt" | cut -c1-500
fi
if [[ $steps == *" score "* ]]; then
  # The batch's GPU cost alone: Tandem's scoring forward in process beside PyTorch's (B.7's denominator).
  timeout 120 python3 bench/torch/gpt2_infer.py 1,16,32,64 > "$OUT/gpt2-infer-torch.jsonl" 2> "$OUT/gpt2-infer-torch.err"
  # Runtime sequences and kept plans (default) beside a task per kernel, in the same call.
  for s in on off; do
    timeout 120 node dist/bench/gpt-score.js --sequences $s --batches 1,16,32,64 \
      --torch "$OUT/gpt2-infer-torch.jsonl" >> "$OUT/gpt-score.jsonl" 2>&1
    echo "score sequences=$s rc=$?"
  done
  # Irregular batch sizes (what the lane forms at c64): bucketed plan shapes beside exact ones.
  timeout 120 node dist/bench/gpt-score.js --irregular 17-64 --reps 300 >> "$OUT/gpt-score.jsonl" 2>&1
  echo "score irregular rc=$?"
  cat "$OUT/gpt-score.jsonl" | cut -c1-400
fi
# The profiles as one tar (one file per thread would exceed what comes back).
for d in "$OUT"/prof-*; do [ -d "$d" ] && tar -czf "$d.tgz" -C "$OUT" "$(basename "$d")" && rm -rf "$d"; done
ls -la "$OUT"
