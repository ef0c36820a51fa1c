#!/usr/bin/env bash
# The "fashion" profile of pack.sh (`GPU_PACK_PROFILE=fashion bash scripts/gpu/pack.sh`, or this script):
# what scripts/gpu/fashion.sh needs on the H200 and nothing more, in .gpu-fashion/ (git-ignored), beside
# .gpu/ which it leaves alone. Carry: .gpu-fashion (alone: not dist, not .gpu). It holds Node (xz),
# koffi (the CUDA FFI), the protobuf reader that the ONNX importer loads (the `tandem` entry point imports
# it), dist/ as an xz'd tar, and Fashion-MNIST from Debian's dataset-fashion-mnist: the two image files
# re-compressed with xz -9 (22.7 + 3.8 MB instead of 26.4 + 4.4 MB of gzip; fashion.sh unpacks them on the
# device), the label files as they are. No webgpu, service dependencies, corpus, OCR or ONNX test data.
# Run `npm run build` first. Prints the sizes and the total the call carries counting the tracked and
# untracked files, and fails above the 64 MiB carry limit (less 1 MiB of margin).
set -euo pipefail
cd "$(dirname "$0")/../.."
G=.gpu-fashion
SRC=${FASHION_DIR:-/usr/share/datasets/fashion-mnist}
EXCLUDE=$(git rev-parse --git-path info/exclude)
mkdir -p "$(dirname "$EXCLUDE")"
grep -qx "/$G/" "$EXCLUDE" 2>/dev/null || echo "/$G/" >> "$EXCLUDE"
[ -f dist/bench/fashion.js ] || { echo "pack-fashion: no dist/bench/fashion.js: run npm run build first" >&2; exit 1; }
for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
  [ -f "$SRC/$f.gz" ] || { echo "pack-fashion: no $SRC/$f.gz: apt-get install dataset-fashion-mnist" >&2; exit 1; }
done
mkdir -p $G/fashion

# Node: the same binary as pack.sh's; reuse .gpu/node.xz when it is newer than the binary.
NODE=$(command -v node)
if [ ! -f $G/node.xz ] || [ "$NODE" -nt $G/node.xz ]; then
  if [ -f .gpu/node.xz ] && [ .gpu/node.xz -nt "$NODE" ]; then cp .gpu/node.xz $G/node.xz
  else xz -T2 -6 -c "$NODE" > $G/node.xz; fi
fi

# koffi only, Linux x64 glibc (as pack.sh prunes it).
rm -rf $G/node_modules
mkdir -p $G/node_modules/@koromix
cp -a node_modules/koffi $G/node_modules/koffi
[ -e node_modules/@koromix/koffi-linux-x64 ] && cp -a node_modules/@koromix/koffi-linux-x64 $G/node_modules/@koromix/
if [ -d $G/node_modules/koffi/build ]; then
  find $G/node_modules/koffi/build -mindepth 2 -maxdepth 2 -type d ! -name linux_x64 -exec rm -rf {} +
fi
rm -rf $G/node_modules/@koromix/koffi-linux-x64/musl_x64 $G/node_modules/koffi/vendor $G/node_modules/koffi/doc

# The ONNX importer's protobuf reader (the `tandem` entry point loads src/onnx): onnx-proto and
# protobufjs, as one xz'd tar (2 MB; 23 MB unpacked), unpacked into node_modules by fashion.sh.
(cd node_modules && tar -cf - onnx-proto protobufjs @protobufjs long) | xz -T2 -6 > $G/proto.tar.xz

# dist/ without source maps and declarations.
tar -cf - --exclude='*.map' --exclude='*.d.ts' dist | xz -T2 -6 > $G/dist.tar.xz

# The data set: images xz -9 (minutes on two cores: done once per machine, kept in $CACHE, and redone
# only when the source is newer), labels as Debian ships them.
CACHE=${FASHION_XZ_CACHE:-/tmp/fashion-mnist-xz}
mkdir -p "$CACHE"
for f in train-images-idx3-ubyte t10k-images-idx3-ubyte; do
  if [ ! -f $G/fashion/$f.xz ] || [ "$SRC/$f.gz" -nt $G/fashion/$f.xz ]; then
    if [ -f "$CACHE/$f.xz" ] && [ "$CACHE/$f.xz" -nt "$SRC/$f.gz" ] && xz -t "$CACHE/$f.xz"; then
      cp "$CACHE/$f.xz" $G/fashion/$f.xz
    else
      gzip -dc "$SRC/$f.gz" | xz -T2 -9 > $G/fashion/$f.xz.tmp && mv $G/fashion/$f.xz.tmp $G/fashion/$f.xz
      cp $G/fashion/$f.xz "$CACHE/$f.xz.tmp" && mv "$CACHE/$f.xz.tmp" "$CACHE/$f.xz"
    fi
  fi
done
cp "$SRC/train-labels-idx1-ubyte.gz" "$SRC/t10k-labels-idx1-ubyte.gz" $G/fashion/

du -sh $G/node.xz $G/node_modules $G/proto.tar.xz $G/dist.tar.xz $G/fashion
# What one call carries: the working tree's tracked and untracked (not ignored) files, plus the carry.
tree_bytes=$( { git ls-files -z; git ls-files -z -o --exclude-standard; } | du -cb --files0-from=- 2>/dev/null | tail -1 | cut -f1)
carry_bytes=$(du -sb $G | cut -f1)
total=$((tree_bytes + carry_bytes))
mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }
echo "carry $G: $(mib "$carry_bytes") + working tree $(mib "$tree_bytes") = $(mib "$total") (limit 64 MiB)"
if [ "$total" -gt $((63 * 1048576)) ]; then
  echo "pack-fashion: $(mib "$total") is over the carry limit (64 MiB less 1 MiB of margin)" >&2
  exit 1
fi
