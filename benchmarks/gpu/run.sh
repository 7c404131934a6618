#!/usr/bin/env bash
# The GPU run, as sent to the H200 machine (no registry there): install
# specdsl's missing dependencies from carried wheels (.whl, see
# docs/benchmarks.md), make the model, apply gpu.spec. Results go to $OUT.
set -euo pipefail
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/lark-*.whl .whl/tomli_w-*.whl .whl/uv-*.whl
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH
nvidia-smi -L
python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)"
python3 benchmarks/gpu/make_model.py /tmp/llama800m
mkdir -p /tmp/run && cp benchmarks/gpu/gpu.spec /tmp/run/
cd /tmp/run
SPECDSL_ENV_ROOT=/tmp/envs python3 -m specdsl.cli.main apply gpu.spec --yes \
    -var wheels="$OLDPWD/.whl" -var model=/tmp/llama800m 2>&1 | tee "$OUT/apply.log" || true
cp stacks/gpu.lock.toml "$OUT/" 2>/dev/null || true
cp .specdsl/state.toml "$OUT/" 2>/dev/null || true
