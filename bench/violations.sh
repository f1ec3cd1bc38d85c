#!/usr/bin/env bash
# bench/violations.sh: what filesystem observation (seccomp notifications on
# write-intent calls, answered CONTINUE by srt) costs on a write-heavy
# workload: untarring a tree of FILES small files, and `git clone` of a local
# repository of FILES files, each in the sandbox with --observe-fs and
# --observe-fs=false. Also the same untar with a denyRead entry,
# where every open is observed.
#
#   bench/violations.sh            # print hyperfine's tables
#
# Environment: SRT (binary; default: build one), FILES (default 3000),
# RUNS (default 15), WARMUP (default 3).
set -euo pipefail
export LC_ALL=C
FILES=${FILES:-3000}
RUNS=${RUNS:-15}
WARMUP=${WARMUP:-3}
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_setup violations
bench_tree "$FILES" 30 1024

out=$work/out
mkdir -p "$out"
echo '{"filesystem":{"allowWrite":["'"$out"'"]}}' >"$work/s.json"
echo '{"filesystem":{"allowWrite":["'"$out"'"],"denyRead":["'"$work"'/secret"]}}' >"$work/s-deny.json"
mkdir -p "$work/secret"

reset="rm -rf $out/src $out/clone"
untar="tar -C $out -xf $work/tree.tar"
clone="git clone -q $src $out/clone"

echo "== untar of $FILES files (tar -xf) =="
hyperfine -N -r "$RUNS" -w "$WARMUP" -p "$reset" \
	-n "untar, observe off" "$srt -s $work/s.json --observe-fs=false -- $untar" \
	-n "untar, observe on" "$srt -s $work/s.json --observe-fs -- $untar" \
	-n "untar, observe on + denyRead (every open)" "$srt -s $work/s-deny.json --observe-fs -- $untar"

echo "== git clone of a local repository of $FILES files =="
hyperfine -N -r "$RUNS" -w "$WARMUP" -p "$reset" \
	-n "clone, observe off" "$srt -s $work/s.json --observe-fs=false -- $clone" \
	-n "clone, observe on" "$srt -s $work/s.json --observe-fs -- $clone" \
	-n "clone, observe on + denyRead (every open)" "$srt -s $work/s-deny.json --observe-fs -- $clone"
