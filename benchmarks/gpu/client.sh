#!/usr/bin/env bash
# The benchmark client's ceiling and fidelity on a many-core host (the H200
# machine of docs/benchmarks.md: 16 cores, no registry there). From the
# repository root, with lark, tomli-w and uv carried as wheels in .whl/ (as
# benchmarks/gpu/run.sh). No GPU is used: what is measured is the client,
# against the stdlib doubles of tests/bench, with cores to spare for it.
# Results go to $OUT (or ./gpu-out).
set -uo pipefail
export PYTHONUNBUFFERED=1
out=${OUT:-$PWD/gpu-out}
mkdir -p "$out"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site \
    .whl/lark-*.whl .whl/tomli_w-*.whl .whl/uv-*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH
{
    nproc; uptime
    python3 -c "import sys, aiohttp; print(sys.version.split()[0], 'aiohttp', aiohttp.__version__)"
} > "$out/machine.txt" 2>&1
# one client process against several, the server pinned to the last core
python3 benchmarks/bench_client_ceiling.py --processes "${PROCESSES:-1,2,4,8}" --repeats 3 \
    --requests 8000 --pin > "$out/ceiling.json" 2> "$out/ceiling.err"
# TTFT/ITL/throughput against the known-timing double, beside the reference reader
python3 benchmarks/bench_client_fidelity.py --reps 5 --requests 32 --concurrency 1,8,32 \
    --json "$out/fidelity.json" > "$out/fidelity.txt" 2>&1
uptime >> "$out/machine.txt"
