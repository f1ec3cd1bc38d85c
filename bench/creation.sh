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

out=$work/out
mkdir -p "$out"
deny='"denyWrite":["**/.env","**/*.key","**/*.pem","secrets/**"]'
echo '{"filesystem":{"allowWrite":["'"$out"'"],'"$deny"',"enforceNamesAtCreation":false}}' >"$work/off.json"
echo '{"filesystem":{"allowWrite":["'"$out"'"],'"$deny"'}}' >"$work/on.json"
# compile-like: 2000 objects, each written to a temporary file and renamed.
cat >"$work/compile.sh" <<SH
mkdir -p $out/build
for i in \$(seq 1 2000); do
	echo "obj \$i" > $out/build/o\$i.tmp && mv $out/build/o\$i.tmp $out/build/o\$i.o
done
SH

mkdir -p "$work/old"
printf 'mv %s %s/old/$(date +%%s%%N) && mkdir %s\n' "$out" "$work" "$out" >"$work/reset.sh"
reset="sh $work/reset.sh"
untar="tar -C $out -xf $work/tree.tar"
clone="git clone -q $src $out/clone"
compile="sh $work/compile.sh"

for w in untar clone compile; do
	cmd=${!w}
	echo "== $w ($FILES files; compile: 2000 write+rename) =="
	hyperfine -N -r "$RUNS" -w "$WARMUP" -p "$reset" \
		-n "$w, no srt" "$cmd" \
		-n "$w, srt, rules off" "$srt -s $work/off.json -- $cmd" \
		-n "$w, srt (creation-time rules)" "$srt -s $work/on.json -- $cmd"
done
