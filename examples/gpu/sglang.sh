#!/usr/bin/env bash
# The story on real SGLang 0.5.17 (examples/gpu/sglang.spec) on a GPU host
# without a package registry, one stage per call of at most 10 minutes.
# From the repository root, with the carry (built here by
# examples/gpu/carry/pack.sh, kept out of git) in .carry/gpu/:
#
#   bash examples/gpu/sglang.sh story    # unpack, model, apply current+upgrade, diagnose, history
#   bash examples/gpu/sglang.sh fix      # apply fixed (promotes), re-apply (no change), report
#   bash examples/gpu/sglang.sh triton   # triton against flashinfer, two explicit choices
#
# Every stage is idempotent: a stage on a fresh machine unpacks again and
# restores what an earlier stage brought back, put in ./gpu-in/ (runs.tgz).
# What a reader needs is copied to $OUT (or ./gpu-out): each stage's log,
# state.toml, runs.tgz (state, run folders), the server logs.
set -uo pipefail
export PYTHONUNBUFFERED=1
stage=${1:-story}
repo=${REPO:-$PWD}
cd "$repo"
out=${OUT:-$repo/gpu-out}
mkdir -p "$out"
work=/tmp/story-sglang
site=/tmp/sglang-site
deps=/tmp/specdsl-deps
model=/tmp/llama800m

if [ "${INNER:-}" != 1 ]; then
    t0=$(date +%s)
    # 1. the carry: SGLang's prebuilt site tree (one file, tar.xz) and
    #    specdsl's own missing dependencies as wheels
    if [ ! -d $site/sglang ]; then
        python3 -c "import sys,tarfile; tarfile.open(fileobj=sys.stdin.buffer, mode='r|xz').extractall('/tmp/sglang-unpack', filter='fully_trusted')" \
            < .carry/gpu/sglang-0.5.17-site.tar.xz || { echo "unpack failed" | tee "$out/$stage.log"; exit 1; }
        mv /tmp/sglang-unpack/site $site
    fi
    [ -d $deps/lark ] || python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target $deps .carry/gpu/specdsl-wheels/*.whl
    echo "unpacked at $(( $(date +%s) - t0 )) s" > "$out/$stage-setup.log"
    # 2. the model: a random ~800M Llama (bf16), made on the host
    [ -f $model/config.json ] || python3 benchmarks/gpu/make_model.py $model >> "$out/$stage-setup.log" 2>&1
    echo "model at $(( $(date +%s) - t0 )) s" >> "$out/$stage-setup.log"
    mkdir -p "$work" && cp examples/gpu/sglang.spec "$work/"
    if [ ! -f "$work/.specdsl/state.toml" ] && [ -f "$repo/gpu-in/runs.tgz" ]; then
        tar xzf "$repo/gpu-in/runs.tgz" -C "$work"
    fi
    # 3. the steps under a time budget: on expiry apply gets SIGINT, stops
    #    its servers and keeps what completed
    REPO="$repo" INNER=1 timeout -s INT -k 30 "${BUDGET:-480}" bash "$repo/examples/gpu/sglang.sh" "$stage"
    echo "steps exit $? at $(( $(date +%s) - t0 )) s" >> "$out/$stage.log"
    cd "$work"
    cp .specdsl/state.toml "$out/" 2>/dev/null
    tar czf "$out/runs.tgz" .specdsl stacks 2>/dev/null
    # the server logs of every launch (the reasons and the launch times)
    find .specdsl -name server.log | tar czf "$out/server-logs.tgz" -T - 2>/dev/null
    exit 0
fi

export PYTHONPATH=$deps:$repo SPECDSL_ENV_ROOT=/tmp/envs
specdsl() { python3 -m specdsl.cli.main "$@"; }
cuda_home=$(dirname "$(dirname "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")")
vars=(-var site=$site -var model=$model -var cuda_home="$cuda_home")
cd "$work"
{
    nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv
    python3 -c "import torch; print('torch', torch.__version__)"
    case $stage in
    story)
        echo "== plan"; specdsl plan sglang.spec --target upgrade "${vars[@]}"
        echo "== apply"; specdsl apply sglang.spec --yes --target upgrade "${vars[@]}"; echo "apply exit $?"
        echo "== diagnose"; specdsl diagnose upgrade sglang.spec "${vars[@]}"
        specdsl diagnose upgrade sglang.spec --json "${vars[@]}" > "$out/diagnose.json" 2>/dev/null
        echo "== history"; specdsl history prod ;;
    fix)
        echo "== apply"; specdsl apply sglang.spec --yes --target fixed "${vars[@]}"; echo "apply exit $?"
        echo "== re-apply"; specdsl plan sglang.spec --detailed-exitcode --target fixed "${vars[@]}"; echo "plan exit $?"
        specdsl apply sglang.spec --yes --target fixed "${vars[@]}"; echo "re-apply exit $?"
        echo "== history"; specdsl history prod
        specdsl report fixed sglang.spec -o "$out/report-fixed.html" "${vars[@]}" ;;
    triton)
        echo "== apply"; specdsl apply sglang.spec --yes --target triton "${vars[@]}"; echo "apply exit $?" ;;
    esac
} 2>&1 | tee -a "$out/$stage.log"
