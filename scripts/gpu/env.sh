# Sourced by the scripts in scripts/gpu/ on the H200 machine, which has no Node of its own: unpacks
# the Node and node_modules that pack.sh left in .gpu/ (carried with dist/), puts CUDA's libraries on
# the loader path and sets the kernel cache dir and $OUT. Run from the repository root.
OUT=${OUT:-/tmp/tandem-out}
mkdir -p "$OUT"
if [ ! -x /tmp/node ]; then xz -dc .gpu/node.xz > /tmp/node && chmod +x /tmp/node; fi
export PATH=/tmp:$PATH
# dist/ travels xz'd in .gpu when it is not carried itself (pack.sh). A warm machine keeps the dist/ an
# earlier call unpacked: it is replaced when the tar differs (a carried dist/ has no .from-tar and stays).
if [ -f .gpu/dist.tar.xz ]; then
  sum=$(cksum < .gpu/dist.tar.xz)
  if [ ! -d dist ] || { [ -f dist/.from-tar ] && [ "$(cat dist/.from-tar)" != "$sum" ]; }; then
    rm -rf dist && xz -dc .gpu/dist.tar.xz | tar -xf - && echo "$sum" > dist/.from-tar
  fi
fi
[ -e node_modules ] || ln -s .gpu/node_modules node_modules
# The service's production dependencies (Fastify, onnx-proto, ...; pack.sh): the package root imports
# them, so every script needs them; unpacked once per carried copy.
if [ -f .gpu/svc.tar.xz ] && [ ! -f .gpu/node_modules/.svc-unpacked ]; then
  xz -dc .gpu/svc.tar.xz | tar -xf - -C .gpu/node_modules && touch .gpu/node_modules/.svc-unpacked
fi
# dawn.node travels xz'd (the carry limit); unpack it once beside the original.
for f in .gpu/node_modules/webgpu/dist/linux-x64/*.node.xz; do [ -f "$f" ] && [ ! -f "${f%.xz}" ] && xz -dk "$f"; done
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export TANDEM_CACHE_DIR=${TANDEM_CACHE_DIR:-/tmp/tandem-cache}
mkdir -p "$TANDEM_CACHE_DIR"
# No NVLink multicast anywhere (issue 9).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
