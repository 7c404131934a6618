#!/usr/bin/env bash
# The story's loop on a GPU host without a package registry (the H200 of
# docs/gpu-run.md). From the repository root, with the serving packages and
# specdsl's own missing dependencies carried as wheels in .whl/:
#
#   bash examples/gpu/run.sh apply    # model, apply, re-apply, diagnose
#   bash examples/gpu/run.sh bisect   # bisect the upgrade, report
#
# Work happens in /tmp/story (state, runs); what a reader needs is copied to
# $OUT (or ./gpu-out). A second stage on a fresh machine restores the state
# the first one brought back (./gpu-out/state.toml).
set -uo pipefail
export PYTHONUNBUFFERED=1
stage=${1:-apply}
repo=$PWD
out=${OUT:-$repo/gpu-out}
mkdir -p "$out"
work=/tmp/story

python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site \
    .whl/lark-*.whl .whl/tomli_w-*.whl .whl/uv-*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$repo PATH=/tmp/site/bin:$PATH SPECDSL_ENV_ROOT=/tmp/envs
specdsl() { python3 -m specdsl.cli.main "$@"; }
vars=(-var wheels="$repo/.whl" -var model=/tmp/llama800m)

[ -d /tmp/llama800m ] || python3 benchmarks/gpu/make_model.py /tmp/llama800m
mkdir -p "$work" && cp examples/gpu/story.spec "$work/"
if [ ! -f "$work/.specdsl/state.toml" ] && [ -f "$repo/gpu-in/state.toml" ]; then
    mkdir -p "$work/.specdsl" && cp "$repo/gpu-in/state.toml" "$work/.specdsl/"
fi
cd "$work"
log="$out/$stage.log"
{
    nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv
    python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)"
    if [ "$stage" = apply ]; then
        echo "== plan"; specdsl plan story.spec "${vars[@]}"
        echo "== apply"; start=$(date +%s%N)
        specdsl apply story.spec --yes "${vars[@]}"; echo "apply exit $? wall $(( ($(date +%s%N) - start) / 1000000 )) ms"
        echo "== re-apply"; specdsl plan story.spec --detailed-exitcode "${vars[@]}"; echo "plan exit $?"
        specdsl apply story.spec --yes "${vars[@]}"; echo "re-apply exit $?"
        echo "== diagnose"; specdsl diagnose upgrade story.spec "${vars[@]}"
        specdsl diagnose upgrade story.spec --json "${vars[@]}" > "$out/diagnose.json"
        echo "== history"; specdsl history prod
    else
        echo "== bisect"; specdsl bisect upgrade story.spec --yes "${vars[@]}"; echo "bisect exit $?"
        echo "== report"; specdsl report upgrade story.spec -o "$out/report-upgrade.html" "${vars[@]}"
        specdsl report prod story.spec -o "$out/report-prod.html" "${vars[@]}"
    fi
} 2>&1 | tee "$log"
cp .specdsl/state.toml "$out/" 2>/dev/null
tar czf "$out/runs.tgz" .specdsl stacks 2>/dev/null
exit 0
