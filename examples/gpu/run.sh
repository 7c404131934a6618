#!/usr/bin/env bash
# The story's loop on a GPU host without a package registry (the H200 of
# docs/gpu-run.md). From the repository root, with the serving packages and
# specdsl's own missing dependencies carried as wheels in .whl/ (for Python
# 3.12 on the H200 image: lark, tomli-w, uv; fastapi, uvicorn, starlette,
# pydantic, pydantic-core, openai, httpx2, httpcore2, jiter, distro, sniffio,
# annotated-types, annotated-doc, typing-inspection, typing-extensions,
# opentelemetry-api, truststore, idna, anyio, click, h11: uv resolves inside
# the new environment and does not count the base interpreter's packages):
#
#   bash examples/gpu/run.sh          # model, apply, re-apply, diagnose, bisect
#   bash examples/gpu/run.sh apply    # the first four only
#   bash examples/gpu/run.sh bisect   # bisect the upgrade, report
#
# The report needs nothing of the GPU host: unpack runs.tgz in /tmp/story
# on any machine and run `specdsl report upgrade story.spec -o FILE` there.
# Work happens in /tmp/story (state, runs); what a reader needs is copied to
# $OUT (or ./gpu-out). A second stage on a fresh machine restores what the
# first one brought back, put in ./gpu-in/ (runs.tgz, or state.toml alone).
set -uo pipefail
export PYTHONUNBUFFERED=1
stage=${1:-all}
repo=${REPO:-$PWD}
cd "$repo"
out=${OUT:-$repo/gpu-out}
mkdir -p "$out"
work=/tmp/story

[ "${INNER:-}" = 1 ] || python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site \
    .whl/lark-*.whl .whl/tomli_w-*.whl .whl/uv-*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$repo PATH=/tmp/site/bin:$PATH SPECDSL_ENV_ROOT=/tmp/envs
specdsl() { python3 -m specdsl.cli.main "$@"; }
# the wheels where the spec's default looks (a path of the checkout would be
# recorded in the stack lock and the report)
mkdir -p /tmp/wheels && cp -n .whl/*.whl /tmp/wheels/
vars=(-var wheels=/tmp/wheels -var model=/tmp/llama800m)

[ -d /tmp/llama800m ] || python3 benchmarks/gpu/make_model.py /tmp/llama800m
mkdir -p "$work" && cp examples/gpu/story.spec "$work/"
if [ ! -f "$work/.specdsl/state.toml" ] && [ -f "$repo/gpu-in/runs.tgz" ]; then
    tar xzf "$repo/gpu-in/runs.tgz" -C "$work"  # state, run folders and locks of an earlier stage
elif [ ! -f "$work/.specdsl/state.toml" ] && [ -f "$repo/gpu-in/state.toml" ]; then
    mkdir -p "$work/.specdsl" && cp "$repo/gpu-in/state.toml" "$work/.specdsl/"
fi
cd "$work"
log="$out/$stage.log"
if [ "${INNER:-}" != 1 ]; then
    # the steps under a time budget (a device call has 10 minutes): on
    # expiry apply gets SIGINT, stops its servers and keeps its pairs, and
    # what was recorded still comes back
    REPO="$repo" INNER=1 timeout -s INT -k 30 "${BUDGET:-540}" bash "$repo/examples/gpu/run.sh" "$stage"
    echo "steps exit $?" >> "$log"
    cp .specdsl/state.toml "$out/" 2>/dev/null
    tar czf "$out/runs.tgz" .specdsl stacks 2>/dev/null
    exit 0
fi
{
    nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv
    python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)"
    if [ "$stage" != bisect ]; then
        echo "== plan"; specdsl plan story.spec ${TARGET:+--target "$TARGET"} "${vars[@]}"
        echo "== apply"; start=$(date +%s%N)
        specdsl apply story.spec --yes ${TARGET:+--target "$TARGET"} "${vars[@]}"; echo "apply exit $? wall $(( ($(date +%s%N) - start) / 1000000 )) ms"
        echo "== re-apply"; specdsl plan story.spec --detailed-exitcode "${vars[@]}"; echo "plan exit $?"
        specdsl apply story.spec --yes "${vars[@]}"; echo "re-apply exit $?"
        echo "== diagnose"; specdsl diagnose upgrade story.spec "${vars[@]}"
        specdsl diagnose upgrade story.spec --json "${vars[@]}" > "$out/diagnose.json"
        echo "== history"; specdsl history prod
    fi
    if [ "$stage" != apply ]; then
        echo "== bisect"; specdsl bisect upgrade story.spec --yes "${vars[@]}"; echo "bisect exit $?"
        if [ "$stage" = bisect ]; then
            echo "== report"; specdsl report upgrade story.spec -o "$out/report-upgrade.html" "${vars[@]}"
            specdsl report prod story.spec -o "$out/report-prod.html" "${vars[@]}"
        fi
    fi
} 2>&1 | tee "$log"
