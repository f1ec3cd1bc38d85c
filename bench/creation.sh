#!/usr/bin/env bash
# bench/creation.sh: what creation-time name rules (on by default:
# srt performs every create, mkdir, rename, link, symlink and write open
# for the command) cost, against srt with them off
# (filesystem.enforceNamesAtCreation false) and against no sandbox: untar of FILES small files, git clone
# of a local repository of FILES files, and a compile-like workload (many
# small writes, each written to a temporary name and renamed into place).
#
#   bench/creation.sh            # print hyperfine's tables
#
# Environment: SRT (binary; default: build one), FILES (default 10000),
# RUNS (default 10), WARMUP (default 2), DIR (where the work happens;
# default /tmp — point it at a tmpfs to see srt's own cost without the
# disk's).
#
# Between runs the output is moved aside, not removed: ext4 skips inodes
# freed in the last seconds when it allocates (recently_deleted), so
# creating thousands of files right after removing thousands costs more
# with every run, and the command measured last would pay for it.
set -euo pipefail
export LC_ALL=C
FILES=${FILES:-10000}
RUNS=${RUNS:-10}
WARMUP=${WARMUP:-2}
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_setup creation
bench_tree "$FILES" 100 512

creation_workloads
printf 'mv %s %s/old/$(date +%%s%%N) && mkdir %s\n' "$out" "$work" "$out" >"$work/reset.sh"
reset="sh $work/reset.sh"

for w in untar clone compile; do
	c=cmd_$w cmd=${!c}
	echo "== $w ($FILES files; compile: 2000 write+rename) =="
	hyperfine -N -r "$RUNS" -w "$WARMUP" -p "$reset" \
		-n "$w, no srt" "$cmd" \
		-n "$w, srt, rules off" "$srt -s $work/off.json -- $cmd" \
		-n "$w, srt (creation-time rules)" "$srt -s $work/on.json -- $cmd"
done
