#!/usr/bin/env bash
# Put together what one device call carries for examples/gpu/sglang.sh, in
# .carry/gpu/ (ignored by git; 64 MiB per call at most):
#   sglang-0.5.17-site.tar.xz   SGLang 0.5.17 and what the H200 image lacks, one
#                               prebuilt site tree (build-sglang-site.sh; ~52 MiB)
#   specdsl-wheels/             specdsl's own dependencies the image lacks
#                               (lark, tomli-w, prometheus-client; pure Python)
# then pass it to the device call: carry=[".carry/gpu"].
#
#   OUTDIR=.carry/build-sgl bash examples/gpu/carry/build-sglang-site.sh   # once, ~5-30 min (xz)
#   bash examples/gpu/carry/pack.sh
#
# The FA3 kernel (sgl-kernel's flash_ops.abi3.so, 1.1 GB, 127 MiB at xz -9e)
# needs three more calls (WITH_FA3=1 in build-sglang-site.sh); without it a
# server left at SGLang's Hopper default dies at start (docs/gpu-run.md).
set -euo pipefail
build=${BUILD:-.carry/build-sgl}
dest=.carry/gpu
mkdir -p "$dest/specdsl-wheels"
cp "$build/sglang-0.5.17-site.tar.xz" "$dest/"
python3 -m pip download -q --no-deps --python-version 3.12 --only-binary=:all: -d "$dest/specdsl-wheels" \
    lark tomli_w prometheus_client
du -cb "$dest"/* "$dest"/specdsl-wheels/* | tail -1 | awk '{printf "carry: %.1f MiB (limit 64)\n", $1/1048576}'
