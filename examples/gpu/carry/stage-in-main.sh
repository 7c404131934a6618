#!/usr/bin/env bash
# A device call sends the checkout the session started in, not a helper's
# worktree: copy what examples/gpu/sglang.sh needs (specdsl/, grammar/, examples/gpu/,
# benchmarks/gpu/, the carry in .carry/gpu/) into an ignored folder of that
# checkout and carry that folder; the command then runs from inside it:
#   bash examples/gpu/carry/stage-in-main.sh CHECKOUT      # here
#   run(command="cd .gpu-wt && bash examples/gpu/sglang.sh story", carry=[".gpu-wt"])
set -euo pipefail
main=${1:?the session checkout}
dest=$main/.gpu-wt
grep -qx '/.gpu-wt/' "$(git -C "$main" rev-parse --path-format=absolute --git-common-dir)/info/exclude" 2>/dev/null || \
    echo /.gpu-wt/ >> "$(git -C "$main" rev-parse --path-format=absolute --git-common-dir)/info/exclude"
rm -rf "$dest" && mkdir -p "$dest/.carry"
tar cf - --exclude __pycache__ specdsl grammar examples/gpu examples/quickstart/tiny-llama benchmarks/gpu | tar xf - -C "$dest"
rm "$dest/specdsl/grammar" && cp -r grammar "$dest/specdsl/grammar"   # a link travels as a link only
cp -r .carry/gpu "$dest/.carry/"
[ -d gpu-in ] && cp -r gpu-in "$dest/" || true
du -sb "$dest" | awk '{printf "staged: %.1f MiB\n", $1/1048576}'
