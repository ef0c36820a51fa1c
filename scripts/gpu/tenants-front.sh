#!/usr/bin/env bash
# One H200 call for issues 19 and 20 (carry: dist .gpu .gl, after scripts/gpu/pack.sh, with the build
# before the change in .gpu/dist-before): every GPU test (hung CUDA kernel stopped at its deadline,
# fair sharing on the GPU, the supervised relaunch), `tandem devices` with every backend loadable (stderr
# must stay empty), the fair-share figure with a long CUDA job, and the 10^6-path price through the API
# before and after the change in the same call. Logs under $OUT; a summary last.
#   scripts/gpu/tenants-front.sh [tests] [bench]     (default: both; each fits one 10-minute call)
set -uo pipefail
cd "$(dirname "$0")/../.."
rm -f node_modules
source scripts/gpu/env.sh
# Vulkan and EGL loaders for Dawn (see bench/webgpu-h200.sh), so every backend loads.
if [ -d /usr/local/nvidia ] && ! ldconfig -p | grep -q 'libvulkan.so.1'; then
  for f in .gl/*.deb; do dpkg -x "$f" /; done
  ldconfig
fi
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -f "$icd" ] && export VK_DRIVER_FILES=$icd
egl=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
[ -f "$egl" ] && export __EGL_VENDOR_LIBRARY_FILENAMES=$egl
steps=" ${*:-tests bench} "
summary=()
if [[ $steps == *" tests "* ]]; then
t0=$(date +%s)
timeout 330 node --test --test-reporter=spec --test-concurrency=1 \
  $(find dist/test/gpu dist/test/cuda -name '*.test.js' | sort) > "$OUT/tests.log" 2>&1
summary+=("gpu tests rc=$? in $(($(date +%s) - t0))s: $(grep -E '^ℹ (pass|fail|skipped)' "$OUT/tests.log" | tr '\n' ' ')")
grep -E '^# |✖' "$OUT/tests.log" | head -30
timeout 60 node dist/src/cli/main.js devices > "$OUT/devices.txt" 2> "$OUT/devices-err.txt"
summary+=("tandem devices rc=$? stderr lines=$(wc -l < "$OUT/devices-err.txt")")
grep -E 'cpu|cuda|webgpu' "$OUT/devices.txt" | head -8
fi
if [[ $steps == *" bench "* ]]; then
timeout 150 node dist/bench/fair-share.js --device cuda --n 2048 --x gemm --x-n 8192 --runs 100 --runs-off 10 > "$OUT/fair-gemm.txt" 2>&1
summary+=("fair-share x=gemm rc=$?")
timeout 120 node dist/bench/fair-share.js --device cuda --n 2048 --x option --x-paths 1099511627776 --runs 100 --runs-off 5 > "$OUT/fair-option.txt" 2>&1
summary+=("fair-share x=option rc=$?")
for d in before after; do
  dir=dist; [ $d = before ] && dir=.gpu/dist-before
  timeout 100 node $dir/bench/risk-service.js --device cuda --durability full > "$OUT/risk-service-$d.txt" 2>&1
  summary+=("risk-service $d rc=$?")
done
fi
echo; echo "=== summary ($(date -u +%FT%TZ)) ==="
for s in "${summary[@]}"; do echo "$s"; done
[ -f "$OUT/devices-err.txt" ] && { echo "--- devices stderr"; head -5 "$OUT/devices-err.txt"; }
for f in fair-gemm fair-option; do [ -f "$OUT/$f.txt" ] && { echo "--- $f"; tail -8 "$OUT/$f.txt"; }; done
for d in before after; do
  [ -f "$OUT/risk-service-$d.txt" ] && { echo "--- risk-service $d"; grep -E '^[0-9]+-path|^server|p99|p50' "$OUT/risk-service-$d.txt" | head -6; }
done
exit 0
