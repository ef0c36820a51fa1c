#!/usr/bin/env bash
# WebGPU on the H200 through Dawn/Vulkan, for the combined GPU run: unpacks the Vulkan/GL loaders the
# machine lacks (.gl/*.deb, fetched as the device README says and carried), points the loader at the
# NVIDIA ICD, then runs the WebGPU tests and the f32 GEMM 4096 benchmark beside cuBLAS SGEMM.
# Expects Node and node_modules as scripts/gpu/run.sh leaves them (or a node on PATH), and dist/ built.
#   OUT=/path bash bench/webgpu-h200.sh      logs: $OUT/webgpu-tests.log, $OUT/webgpu-gemm.txt
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/tandem-out}
mkdir -p "$OUT"

# Loaders: only on the GPU machine (it has the NVIDIA driver mount), never on a developer's machine.
if [ -d /usr/local/nvidia ] && ! ldconfig -p | grep -q 'libvulkan.so.1'; then
  for f in .gl/*.deb; do dpkg -x "$f" /; done
  ldconfig
fi
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -f "$icd" ] && export VK_DRIVER_FILES=${VK_DRIVER_FILES:-$icd}
egl=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
[ -f "$egl" ] && export __EGL_VENDOR_LIBRARY_FILENAMES=${__EGL_VENDOR_LIBRARY_FILENAMES:-$egl}

# Node and Dawn as packed by scripts/gpu/pack.sh.
if ! command -v node >/dev/null; then
  [ -x /tmp/node ] || { xz -dc .gpu/node.xz > /tmp/node && chmod +x /tmp/node; }
  export PATH=/tmp:$PATH
fi
[ -e node_modules ] || ln -s .gpu/node_modules node_modules
for f in node_modules/webgpu/dist/linux-x64/*.node.xz; do [ -f "$f" ] && [ ! -f "${f%.xz}" ] && xz -dk "$f"; done

echo "vulkan loader: $(ldconfig -p | grep -m1 'libvulkan.so.1' || echo absent); VK_DRIVER_FILES=${VK_DRIVER_FILES:-unset}"
t0=$(date +%s)
timeout 150 node --test --test-reporter=spec --test-concurrency=1 dist/test/webgpu/*.test.js > "$OUT/webgpu-tests.log" 2>&1
rc=$?
echo "webgpu tests rc=$rc in $(( $(date +%s) - t0 ))s: $(grep -E '^ℹ (pass|fail|skipped)' "$OUT/webgpu-tests.log" | tr '\n' ' ')"
grep -E '^# webgpu device|^# .*via|skipped:' "$OUT/webgpu-tests.log" | head -5
grep -E '^ *✖' "$OUT/webgpu-tests.log" | head -20
timeout 200 node dist/bench/webgpu-gemm.js --n "${WEBGPU_GEMM_N:-4096}" > "$OUT/webgpu-gemm.txt" 2>&1
echo "webgpu gemm bench rc=$?"
grep -vE '^Warning|^ +at |^$' "$OUT/webgpu-gemm.txt" | tail -12
exit 0
