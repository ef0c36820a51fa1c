#!/usr/bin/env bash
# GPU call: where the interactive lane's client latency goes, request by request (issue 16), after
# `bash scripts/gpu/pack.sh` (carry: .gpu). Logs and traces under $OUT.
#   price  the 10^6-path price through the API with --trace (each request's legs client → server →
#          client), once plain and once under V8's sampler at 100 µs; bench/lane-tail.js then says what
#          each thread was doing during the slowest 1 % (profiles tarred back)
#   gpt    B.7 at c16/c64 (delay 0, one and two batches in flight) with the load generator on 1 thread and
#          on LOAD_THREADS_HI threads (default 4), beside PyTorch's offline forward
#   scripts/gpu/lane-tail.sh [price] [gpt]      (default: both; PRICE_FLAGS_B="<node flags>": a price A/B)
set -uo pipefail
cd "$(dirname "$0")/../.."
rm -f node_modules
source scripts/gpu/env.sh
PY=${PY:-python3}
steps=" ${*:-price gpt} "
NODE="node --max-semi-space-size=16 --min-semi-space-size=16"
if [[ $steps == *" price "* ]]; then
  PYTHONUNBUFFERED=1 timeout 120 $PY bench/py/risk_torch.py --paths 1048576 --runs 1000 > "$OUT/risk-torch.json" 2> "$OUT/risk-torch.err"
  echo "torch risk rc=$?: $(tail -1 "$OUT/risk-torch.json" | cut -c1-300)"
  timeout 200 $NODE dist/bench/serve-lane.js price --device cuda --trace "$OUT/trace-plain" \
    --torch-risk "$OUT/risk-torch.json" > "$OUT/price-plain.txt" 2>&1
  echo "price plain rc=$?"; grep -E 'through the API|gc on|in-process|trace|slowest|middle|all:|^      [0-9]' "$OUT/price-plain.txt" | cut -c1-400
  # PRICE_FLAGS_B: the same plain run with other Node flags, e.g. "--single-threaded-gc" (an A/B beside it).
  if [ -n "${PRICE_FLAGS_B:-}" ]; then
    timeout 200 $NODE $PRICE_FLAGS_B dist/bench/serve-lane.js price --device cuda > "$OUT/price-b.txt" 2>&1
    echo "price with $PRICE_FLAGS_B rc=$?"; grep -E 'through the API|gc on' "$OUT/price-b.txt" | cut -c1-400
  fi
  mkdir -p "$OUT/prof"
  timeout 200 $NODE --cpu-prof --cpu-prof-interval 100 --cpu-prof-dir "$OUT/prof" dist/bench/serve-lane.js price \
    --device cuda --trace "$OUT/trace-prof" > "$OUT/price-prof.txt" 2>&1
  echo "price profiled rc=$?"; grep -E 'trace|slowest|middle' "$OUT/price-prof.txt" | cut -c1-300
  for t in "$OUT"/trace-prof-*.json; do
    echo "== profiles, $(basename "$t" .json) (pass-hot loop us)"
    node dist/bench/lane-tail.js --trace "$t" --profiles "$OUT/prof" --top 7 2>&1 |
      grep -v ': $' | grep -v '100% (idle)$' | cut -c1-700
  done
  # Few files come back: the profiles and traces as one archive.
  tar -czf "$OUT/prof.tgz" -C "$OUT" prof $(cd "$OUT" && ls trace-*.json) && rm -rf "$OUT/prof" "$OUT"/trace-*.json
fi
if [[ $steps == *" gpt "* ]]; then
  timeout 120 $PY bench/torch/gpt2_infer.py 1,64 > "$OUT/gpt2-infer-torch.jsonl" 2> "$OUT/gpt2-infer-torch.err"
  echo "torch gpt2 infer rc=$?: $(tr '\n' ' ' < "$OUT/gpt2-infer-torch.jsonl" | cut -c1-300)"
  for t in 1 ${LOAD_THREADS_HI:-4}; do
    LOAD_THREADS=$t GPT_LANE_VARIANTS=${GPT_LANE_VARIANTS:-gpt-d0,gpt-d0-i2} GPT_LANE_LEVELS=16,64 timeout 200 \
      $NODE dist/bench/serve-lane.js gpt --device cuda --seconds "${SECONDS_PER_LEVEL:-3}" \
      --torch-gpt "$OUT/gpt2-infer-torch.jsonl" > "$OUT/gpt-threads$t.txt" 2>&1
    echo "gpt, load threads $t rc=$?"; grep -E '^B\.7|c16:|c64:' "$OUT/gpt-threads$t.txt" | cut -c1-400
  done
fi
