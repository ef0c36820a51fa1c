#!/usr/bin/env bash
# Issue 19 on the H200 host (16 cores, quiet): the overload figure with the server alone on two cores,
# the load generator and the /healthz probe on others, and the hung-kernel test.
#   here:  npm run build && scripts/gpu/pack.sh && scripts/gpu/overload.sh pack     (carry: .gpu)
#   there: scripts/gpu/overload.sh [overload] [hung] [fair]          (default: overload hung, ~3.5 min)
# `pack` adds autocannon and its dependencies (a dev dependency, so not in pack.sh's service tar) as
# .gpu/bench-deps.tar.xz. overload: `bench/overload.ts` with the server pinned to two CPUs (as many as the
# 2-vCPU dev VM has) and the benchmark, autocannon and the probe on the other 14, so nothing but the server
# runs on the server's cores: accepted p99, 429s with Retry-After, /healthz p99 (probed from its own
# process and, for comparison, from the load generator's), every accepted job run. hung: a custom CUDA
# kernel that never ends is stopped at its deadline by the relaunch (test/gpu/hung-kernel.test.ts).
# Logs under $OUT; a summary last.
set -uo pipefail
cd "$(dirname "$0")/../.."
if [ "${1:-}" = pack ]; then
  # autocannon's dependency closure, as node resolves it from the top-level node_modules.
  list=$(node -e '
    const fs = require("fs"), path = require("path");
    const seen = new Set();
    const visit = (dir) => {
      const rel = path.relative("node_modules", dir);
      if (seen.has(rel)) return;
      seen.add(rel);
      const deps = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")).dependencies ?? {};
      for (const name of Object.keys(deps)) {
        let d = dir;
        for (;;) {
          const c = path.join(d, "node_modules", name);
          if (fs.existsSync(c)) { visit(c); break; }
          if (d === ".") throw new Error("unresolved " + name);
          const i = d.lastIndexOf("/node_modules/");
          d = i < 0 ? "." : d.slice(0, i);
        }
      }
    };
    visit("node_modules/autocannon");
    console.log([...seen].join("\n"));')
  (cd node_modules && tar -chf - $list) | xz -T2 -6 > .gpu/bench-deps.tar.xz
  du -sh .gpu/bench-deps.tar.xz
  exit 0
fi
rm -f node_modules
source scripts/gpu/env.sh
[ -f .gpu/bench-deps.tar.xz ] && xz -dc .gpu/bench-deps.tar.xz | tar -xf - -C .gpu/node_modules
steps=" ${*:-overload hung} "
summary=()
if [[ $steps == *" overload "* ]]; then
  # The CPUs this container may use (a cpuset need not start at 0): the first two for the server.
  read -r server_cpus client_cpus < <(python3 -c 'import os; c = sorted(os.sched_getaffinity(0)); print(",".join(map(str, c[:2])), ",".join(map(str, c[2:])))')
  echo "cores: $(nproc), server on $server_cpus, generator on $client_cpus, load: $(cat /proc/loadavg)"
  # As every figure so far (--no-supervise), then as `tandem serve` runs by default (supervised, with
  # its 16 MiB young generation).
  for sup in "" --supervise; do
    f="$OUT/overload${sup:+-supervised}"
    timeout 150 taskset -c "$client_cpus" node dist/bench/overload.js --seconds 15 --drain 60 --modes on \
      --probe both --server-cpus "$server_cpus" $sup > "$f.jsonl" 2> "$f.err"
    summary+=("overload ${sup:-(--no-supervise)} rc=$?")
  done
fi
if [[ $steps == *" hung "* ]]; then
  t0=$(date +%s)
  timeout 120 node --test --test-reporter=spec dist/test/gpu/hung-kernel.test.js > "$OUT/hung.log" 2>&1
  summary+=("hung-kernel rc=$? in $(($(date +%s) - t0))s: $(grep -E '^ℹ (pass|fail|skipped)' "$OUT/hung.log" | tr '\n' ' ')")
fi
# Not in the default: the fair-share figure with a long CUDA job (~2 min each), as measured 2026-12-03.
if [[ $steps == *" fair "* ]]; then
  timeout 150 node dist/bench/fair-share.js --device cuda --n 2048 --x gemm --x-n 8192 --runs 100 --runs-off 10 > "$OUT/fair-gemm.txt" 2>&1
  summary+=("fair-share x=gemm rc=$?: $(tail -3 "$OUT/fair-gemm.txt" | tr '\n' ' ' | cut -c1-400)")
fi
echo; echo "=== summary ($(date -u +%FT%TZ)) ==="
for s in "${summary[@]}"; do echo "$s"; done
for f in "$OUT/overload.jsonl" "$OUT/overload-supervised.jsonl"; do
  [ -f "$f" ] || continue
  echo "--- $(basename "$f") (server on two CPUs of its own; generator and probe on the others)"
  node -e '
    for (const l of require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n")) {
      const r = JSON.parse(l);
      if (!r.multiple) { console.log(l); continue; }
      const keys = ["multiple", "offeredPerSec", "acceptedPerSec", "acceptedP99ms", "refused429", "refusedWithRetryAfter",
        "healthP50ms", "healthP99ms", "healthMaxms", "healthInline", "rssMaxMiB", "serverCpuPercent", "everyAcceptedSucceeded"];
      console.log(JSON.stringify(Object.fromEntries(keys.map((k) => [k, r[k]]))));
    }' "$f"
  tail -3 "${f%.jsonl}.err"
done
[ -f "$OUT/hung.log" ] && grep -E '✔|✖|ℹ|relaunch|charged' "$OUT/hung.log" | head -20
exit 0
