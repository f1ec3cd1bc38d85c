#!/usr/bin/env bash
# bench/ab.sh: compare two srt binaries on one command line, alternating
# them run by run so that the machine's noise falls on both alike.
#
#   A=/tmp/before/srt B=/tmp/after/srt N=80 bench/ab.sh true
#   A=... B=... bench/ab.sh -s settings.json true
#
# Prints each binary's median and 10th percentile wall time, and B/A.
set -euo pipefail
: "${A:?set A to the first srt binary}" "${B:?set B to the second srt binary}"
N=${N:-60}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for i in $(seq "$N"); do
	for x in A B; do
		bin=${!x}
		s=$(date +%s%N)
		"$bin" "$@" >/dev/null 2>&1 || true
		e=$(date +%s%N)
		echo $(((e - s) / 1000)) >>"$tmp/$x"
	done
done
stat() { sort -n "$1" | awk '{a[NR]=$1} END {printf "%.2f %.2f", a[int(NR/2)+1]/1000, a[int(NR/10)+1]/1000}'; }
read -r ma pa <<<"$(stat "$tmp/A")"
read -r mb pb <<<"$(stat "$tmp/B")"
printf 'A %s: median %s ms, p10 %s ms\n' "$A" "$ma" "$pa"
printf 'B %s: median %s ms, p10 %s ms\n' "$B" "$mb" "$pb"
awk -v a="$ma" -v b="$mb" 'BEGIN {printf "B/A (medians) %.2f\n", b/a}'
