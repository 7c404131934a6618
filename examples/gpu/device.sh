#!/usr/bin/env bash
# The story on real SGLang 0.5.17 and vLLM 0.26.0, on one GPU host without a
# registry, in as few device calls as the carries allow (docs/gpu-run.md).
# The work runs in one background pipeline started by the first call (a new
# process session, so it outlives the call); the calls after it only bring
# the rest of the carry (64 MiB a call) and collect:
#
#   bash examples/gpu/device.sh start .carry/c1 "STAGES"  # specdsl's wheels, the model, the pipeline (+ any carry part)
#   bash examples/gpu/device.sh part  .carry/c2           # one more carry part (SGLang's tree, FA3, vLLM)
#   bash examples/gpu/device.sh wait  560                 # until the pipeline ends or 560 s pass; collect
#   bash examples/gpu/device.sh jit                       # the JIT caches now (jit.tgz), pipeline done or not
#
# (each with carry=[".carry/cN"], back to back: an idle machine goes back
# after 30 s, and /tmp with it). A carry directory may hold any of: the
# SGLang tree (sglang-0.5.17-site.tar.xz), the FA3 kernel's zstd parts, the
# vLLM tree's zstd parts, the zstandard wheel that reads them, specdsl's
# wheels. STAGES (in order, default "sglang-fix sglang-upgrade vllm"):
#   sglang-fix      `fixed` against production, promoted; a re-plan and a
#                   re-apply that change nothing; history; the report
#   sglang-upgrade  the upgrade (the server's default backend, FA3 carried),
#                   its diagnosis, a re-plan and re-apply, the report
#   vllm            vllm.spec: the default backend, then flashinfer against
#                   triton, the report
#   vllm-decide     vllm.spec on the 8B-shaped model (GPU-bound): flashinfer
#                   against triton in at most DECIDE_PAIRS pairs, the report
#   noise           benchmarks/gpu/noise.py: both clients on the same launches
#                   (NOISE_SETUPS, NOISE_MODEL, NOISE_BUDGET, NOISE_ARGS)
# Each stage waits for its carry. Every collect writes to $OUT:
# pipeline.log, status.txt and per engine one archive (state, run folders,
# server logs, reports, diagnosis JSON), split in 15 MiB parts where larger;
# once the pipeline is done, also jit.tgz: the JIT caches (triton, tvm-ffi,
# flashinfer, vLLM's torch.compile: /tmp/jit, /tmp/vjit), in 15 MiB parts
# (jit.tgz.part0, ...) where larger.
# Put it in a later session's first carry and `start` unpacks it first, so
# that session's first launches start warm (SGLang 0.5.17's first launch
# captured prefill CUDA graphs for 176 s cold, 4.5 s warm).
set -uo pipefail
export PYTHONUNBUFFERED=1
cmd=${1:?start, part, wait or pipeline}
arg=${2:-}
out=${OUT:-$PWD/gpu-out}
code=/tmp/specdsl-code; site=/tmp/sglang-site; vsite=/tmp/vsite; deps=/tmp/specdsl-deps
model=/tmp/llama800m; parts=/tmp/parts; log=/tmp/pipeline.log
mkdir -p "$out" "$parts"

collect() {
    cp "$log" "$out/" 2>/dev/null
    {
        date -u +%FT%TZ
        ls /tmp/*.ready /tmp/pipeline.done 2>/dev/null
        nvidia-smi --query-gpu=memory.used,utilization.gpu --format=csv,noheader
    } > "$out/status.txt" 2>&1
    for w in sglang vllm vllm8b; do
        [ -d /tmp/story-$w/.specdsl ] || continue
        rm -f "$out/$w.tgz"*
        (cd /tmp/story-$w && tar czf "$out/$w.tgz" --exclude '*.so' --exclude envs .specdsl stacks ./*.log ./*.json ./*.html 2>/dev/null)
        if [ "$(stat -c %s "$out/$w.tgz")" -gt 15728640 ]; then
            split -b 15M -d -a 1 "$out/$w.tgz" "$out/$w.tgz.part" && rm "$out/$w.tgz"
        fi
    done
    if [ -d /tmp/probe ]; then  # the probe's figures and its server logs' first lines
        (cd /tmp/probe && tar czf "$out/probe.tgz" probe.json noise.json */server.log */vllm-bench.log 2>/dev/null)
        cp /tmp/probe/probe.json /tmp/probe/noise.json "$out/" 2>/dev/null
    fi
    if [ -f /tmp/pipeline.done ]; then pack_jit; fi
}

pack_jit() {  # the JIT caches, for a later session's first carry (15 MiB parts: what one file back may be)
    ls "$out"/jit.tgz* >/dev/null 2>&1 && return
    local dirs; dirs=$(cd /tmp && ls -d jit vjit 2>/dev/null)
    [ -n "$dirs" ] || return
    (cd /tmp && tar czf "$out/jit.tgz" $dirs 2>/dev/null)
    if [ "$(stat -c %s "$out/jit.tgz")" -gt 15728640 ]; then
        split -b 15M -d -a 1 "$out/jit.tgz" "$out/jit.tgz.part" && rm "$out/jit.tgz"
    fi
}

unpack_parts() {  # assemble what has arrived; each kind once, when all its parts are there
    cp -n "$1"/*.part* "$1"/*.sha256 "$1"/*.whl "$parts"/ 2>/dev/null
    if [ ! -d $site/sglang ] && [ -f "$1/sglang-0.5.17-site.tar.xz" ]; then
        python3 -c "import sys,tarfile; tarfile.open(fileobj=sys.stdin.buffer, mode='r|xz').extractall('/tmp/sglang-unpack', filter='fully_trusted')" \
            < "$1/sglang-0.5.17-site.tar.xz" && mv /tmp/sglang-unpack/site $site
        echo "$(date -u +%T) SGLang tree in: $(ls $site 2>&1 | wc -l) entries" >> $log
    fi
    if [ ! -f /tmp/fa3.ready ] && [ -f $parts/flash_ops.abi3.so.zst.part02 ] && [ -d $site/sgl_kernel ]; then
        # zstd (--long=27) rather than xz: 20x faster to make on 2 cores, the
        # same 3 parts; read with the zstandard wheel carried beside part 00
        [ -d /tmp/zdeps/zstandard ] || python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/zdeps $parts/zstandard-*.whl
        cat $parts/flash_ops.abi3.so.zst.part0[012] | PYTHONPATH=/tmp/zdeps python3 -c "
import shutil, sys, zstandard
shutil.copyfileobj(zstandard.ZstdDecompressor(max_window_size=1 << 27).stream_reader(sys.stdin.buffer, read_across_frames=True), sys.stdout.buffer, 1 << 24)
" > $site/sgl_kernel/flash_ops.abi3.so.tmp &&
            (cd $site/sgl_kernel && echo "$(cut -d' ' -f1 $parts/flash_ops.abi3.so.sha256)  flash_ops.abi3.so.tmp" | sha256sum -c --quiet) &&
            mv $site/sgl_kernel/flash_ops.abi3.so.tmp $site/sgl_kernel/flash_ops.abi3.so && touch /tmp/fa3.ready
        echo "$(date -u +%T) FA3 kernel in: $(ls -la $site/sgl_kernel/flash_ops.abi3.so 2>&1)" >> $log
    fi
    if [ ! -f /tmp/vllm.ready ] && [ -f $parts/vllm-0.26.0-site.tar.zst.part01 ]; then
        [ -d /tmp/zdeps/zstandard ] || python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/zdeps $parts/zstandard-*.whl
        cat $parts/vllm-0.26.0-site.tar.zst.part0[01] | PYTHONPATH=/tmp/zdeps python3 -c "
import sys, tarfile, zstandard
stream = zstandard.ZstdDecompressor(max_window_size=1 << 27).stream_reader(sys.stdin.buffer, read_across_frames=True)
tarfile.open(fileobj=stream, mode='r|').extractall('/tmp/vunpack', filter='fully_trusted')
" && rm -rf $vsite && mv /tmp/vunpack/site $vsite && touch /tmp/vllm.ready
        echo "$(date -u +%T) vLLM tree in: $(ls $vsite 2>&1 | wc -l) entries" >> $log
    fi
}

case $cmd in
start)
    t0=$(date +%s)
    if ls "$arg"/jit.tgz* >/dev/null 2>&1 && [ ! -d /tmp/jit ] && [ ! -d /tmp/vjit ]; then  # an earlier session's JIT caches (one file or parts)
        cat $(ls "$arg"/jit.tgz "$arg"/jit.tgz.part* 2>/dev/null) | tar xzf - -C /tmp && echo "$(date -u +%T) JIT caches in: $(du -sh /tmp/jit /tmp/vjit 2>/dev/null | tr '\n' ' ')" >> $log
    fi
    [ -d $deps/lark ] || python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target $deps "$arg"/specdsl-wheels/*.whl
    rm -rf $code && mkdir -p $code
    tar cf - --exclude __pycache__ specdsl grammar examples/gpu examples/quickstart/tiny-llama benchmarks/gpu | tar xf - -C $code
    echo "$(date -u +%T) unpacked in $(( $(date +%s) - t0 )) s" >> $log
    [ -f $model/config.json ] || [ -n "${SKIP_MODEL:-}" ] || python3 benchmarks/gpu/make_model.py $model >> $log 2>&1
    echo "$(date -u +%T) model at $(( $(date +%s) - t0 )) s" >> $log
    unpack_parts "$arg"
    setsid nohup bash $code/examples/gpu/device.sh pipeline "${3:-sglang-fix sglang-upgrade vllm}" < /dev/null >> $log 2>&1 &
    sleep 2; collect ;;
part)
    unpack_parts "$arg"; collect ;;
jit)
    pack_jit; collect ;;
wait)
    end=$(( $(date +%s) + ${arg:-560} ))
    last=$(date +%s)
    while [ ! -f /tmp/pipeline.done ] && [ "$(date +%s)" -lt "$end" ]; do
        sleep 5
        # collect every 90 s too: a call cut short by the session's device
        # time still brings back what $OUT held
        if [ $(( $(date +%s) - last )) -ge 90 ]; then collect; last=$(date +%s); fi
    done
    collect ;;
pipeline)
    export PYTHONPATH=$deps:$code SPECDSL_ENV_ROOT=/tmp/envs
    specdsl() { python3 -m specdsl.cli.main "$@"; }
    cuda_home=$(dirname "$(dirname "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")")
    until_ready() {  # wait for a carry the later calls bring (at most $2 s)
        local end=$(( $(date +%s) + $2 ))
        while [ ! -f "$1" ] && [ "$(date +%s)" -lt "$end" ]; do sleep 5; done
    }
    stage() { echo; echo "== $(date -u +%T) $*"; }
    nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv
    python3 -c "import torch; print('torch', torch.__version__)"
    vars=(-var site=$site -var model=$model -var cuda_home="$cuda_home")
    vvars=(-var vsite=$vsite -var model=$model -var cuda_home="$cuda_home")
    in_sglang() { mkdir -p /tmp/story-sglang && cp -n $code/examples/gpu/sglang.spec /tmp/story-sglang/ && cd /tmp/story-sglang; }
    for s in $arg; do
        case $s in
        sglang-fix)
            until_ready $site/sglang/__init__.py 600; in_sglang
            stage "sglang: plan"; specdsl plan sglang.spec "${vars[@]}"
            stage "sglang: apply fixed"; specdsl apply sglang.spec --yes --target fixed "${vars[@]}"; echo "apply exit $?"
            stage "sglang: re-plan fixed"; specdsl plan sglang.spec --detailed-exitcode --target fixed "${vars[@]}"; echo "plan exit $?"
            stage "sglang: re-apply fixed"; specdsl apply sglang.spec --yes --target fixed "${vars[@]}"; echo "apply exit $?"
            stage "sglang: history"; specdsl history prod
            specdsl report fixed sglang.spec -o report-fixed.html "${vars[@]}" ;;
        sglang-upgrade)
            until_ready /tmp/fa3.ready 900; in_sglang
            stage "sglang: apply upgrade"; specdsl apply sglang.spec --yes --target upgrade "${vars[@]}"; echo "apply exit $?"
            stage "sglang: diagnose upgrade"; specdsl diagnose upgrade sglang.spec "${vars[@]}"
            specdsl diagnose upgrade sglang.spec --json "${vars[@]}" > diagnose-upgrade.json
            stage "sglang: re-plan"; specdsl plan sglang.spec --detailed-exitcode --target fixed --target upgrade "${vars[@]}"; echo "plan exit $?"
            stage "sglang: re-apply"; specdsl apply sglang.spec --yes --target fixed --target upgrade "${vars[@]}"; echo "apply exit $?"
            specdsl report upgrade sglang.spec -o report-upgrade.html "${vars[@]}" ;;
        vllm)
            until_ready /tmp/vllm.ready 600
            mkdir -p /tmp/story-vllm && cp -n $code/examples/gpu/vllm.spec /tmp/story-vllm/ && cd /tmp/story-vllm
            stage "vllm: plan"; specdsl plan vllm.spec "${vvars[@]}"
            stage "vllm: apply default"; specdsl apply vllm.spec --yes --target vllm-default "${vvars[@]}"; echo "apply exit $?"
            stage "vllm: apply flashinfer against triton"; specdsl apply vllm.spec --yes --target vllm-flashinfer "${vvars[@]}"; echo "apply exit $?"
            stage "vllm: re-plan"; specdsl plan vllm.spec --detailed-exitcode "${vvars[@]}"; echo "plan exit $?"
            stage "vllm: one more pair (max_runs 2 -> 3)"; specdsl plan vllm.spec --target vllm-flashinfer -var pairs=3 "${vvars[@]}"
            specdsl apply vllm.spec --yes --target vllm-flashinfer -var pairs=3 "${vvars[@]}"; echo "apply exit $?"
            specdsl report vllm-flashinfer vllm.spec -o report-vllm.html -var pairs=3 "${vvars[@]}" ;;
        vllm-decide)
            # FLASHINFER against TRITON_ATTN on the quiet set-up: the 8B-shaped model, 32 streams of
            # 256 tokens (GPU-bound), 3 runs an arm a launch, a first look at 2 pairs, at most 4
            [ -f /tmp/llama8b/config.json ] || python3 $code/benchmarks/gpu/make_model.py /tmp/llama8b 8b
            until_ready /tmp/vllm.ready 600
            mkdir -p /tmp/story-vllm8b && cp -n $code/examples/gpu/vllm.spec /tmp/story-vllm8b/ && cd /tmp/story-vllm8b
            dvars=(-var vsite=$vsite -var model=/tmp/llama8b -var cuda_home="$cuda_home" -var concurrency=32
                   -var len=256 -var block=3 -var pairs=${DECIDE_PAIRS:-4} -var warmup_time=60s -var tolerance=3%)
            stage "vllm 8b: plan"; specdsl plan vllm.spec --target vllm-flashinfer "${dvars[@]}"
            stage "vllm 8b: apply flashinfer against triton"
            specdsl apply vllm.spec --yes --target vllm-flashinfer "${dvars[@]}"; echo "apply exit $?"
            specdsl report vllm-flashinfer vllm.spec -o report-vllm8b.html "${dvars[@]}" ;;
        noise)
            # how noisy one launch is and where it comes from (benchmarks/gpu/noise.py): vLLM launches,
            # specdsl's client and `vllm bench serve` run by run, with the GPU's clocks and power, the
            # host's CPU and steal, the server's own CPU, the prefix cache and the log's JIT lines per run.
            # NOISE_MODEL=8b makes and uses an 8B-shaped random Llama (GPU-bound; 800m: host-bound)
            until_ready /tmp/vllm.ready 600
            nmodel=$model
            if [ "${NOISE_MODEL:-800m}" = 8b ]; then
                nmodel=/tmp/llama8b
                [ -f $nmodel/config.json ] || python3 $code/benchmarks/gpu/make_model.py $nmodel 8b
            fi
            stage "noise: ${NOISE_SETUPS:-pinned-nocache,pinned-nocache-2,pinned-nocache-3} on $nmodel ${NOISE_ARGS:-}"
            env PYTHONPATH=$vsite:$deps:$code HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 VLLM_NO_USAGE_STATS=1 \
                DO_NOT_TRACK=1 CUDA_HOME="$cuda_home" VLLM_CACHE_ROOT=/tmp/vjit/vllm FLASHINFER_WORKSPACE_BASE=/tmp/vjit \
                TRITON_CACHE_DIR=/tmp/vjit/triton TVM_FFI_CACHE_DIR=/tmp/vjit/tvm-ffi NCCL_NVLS_ENABLE=0 \
                TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 \
                python3 $code/benchmarks/gpu/noise.py --model $nmodel --out /tmp/probe \
                    --setups "${NOISE_SETUPS:-pinned-nocache,pinned-nocache-2,pinned-nocache-3}" \
                    --budget "${NOISE_BUDGET:-420}" ${NOISE_ARGS:-} ;;
        *) echo "unknown stage $s" ;;
        esac
    done
    stage "done"; touch /tmp/pipeline.done ;;
*)
    echo "unknown command $cmd" >&2; exit 2 ;;
esac
