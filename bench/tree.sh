#!/usr/bin/env bash
# bench/tree.sh: how srt's start-up grows with the size of the working
# tree when the settings hold deny globs (issue 19: start-up flat in tree
# size). Times `srt -s S true` in a 100,000-file tree (1,000 directories of
# 100 files) and in a 100-file tree (10 of 10), each with the same 11 .env
# and 4 .pem files, for four settings, and prints each big/small ratio of
# the medians of the wall time of the whole srt run.
#
#   bench/tree.sh                      # the repository's srt
#   A=/tmp/base/srt bench/tree.sh      # also a second binary, same run
#
# Environment:
#   SRT    use this srt binary instead of building one (B in the table)
#   A      a second srt binary (e.g. built from i19-base) timed alongside
#   RUNS   rounds (default 20; each round runs every command once, in
#          turn, so that the machine's noise falls on all alike); WARMUP
#          rounds not counted (default 3)
#   DIR    where the trees are made (default /tmp)
set -euo pipefail
export LC_ALL=C
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/lib.sh
source "$here/lib.sh"
bench_setup tree
RUNS=${RUNS:-20}
WARMUP=${WARMUP:-3}

# mktree DIR NDIRS NFILES: NDIRS directories of NFILES empty files, with a
# .env in ten of them and at the top, and a key.pem in four: both trees
# hold the same matches (each one a mount), so that only their size
# differs.
mktree() {
	local root=$1 nd=$2 nf=$3 d i
	mkdir -p "$root"
	for ((d = 0; d < nd; d++)); do
		mkdir -p "$root/d$d"
		(cd "$root/d$d" && eval "touch f{0..$((nf - 1))}")
	done
	for ((i = 0; i < 10; i++)); do touch "$root/d$((i * nd / 10))/.env"; done
	for ((i = 0; i < 4; i++)); do touch "$root/d$((i * nd / 4))/key.pem"; done
	touch "$root/.env"
}
mktree "$work/big" 1000 100
mktree "$work/small" 10 10
# Nothing racily clean (policy/dirindex): what the first rounds read is
# stored.
sleep 2

declare -A settings=(
	[denywrite-readonly]='{"filesystem":{"denyWrite":["**/.env"]}}'
	[denywrite-writable]='{"filesystem":{"allowWrite":["."],"denyWrite":["**/.env"]}}'
	[denyread]='{"filesystem":{"denyRead":["**/*.pem"]}}'
	# The write root outside the tree: the denyWrite glob's walk
	# enters the tree only to find links into the root (there are none).
	[denywrite-elsewhere]='{"filesystem":{"allowWrite":["'"$work"'/elsewhere"],"denyWrite":["**/.env"]}}'
)
mkdir -p "$work/elsewhere"
for k in "${!settings[@]}"; do printf '%s\n' "${settings[$k]}" >"$work/$k.json"; done

bins=(B)
B=$srt
[[ -n ${A:-} ]] && bins=(A B)
# Every command once per round, rounds repeated: the machine's noise falls
# on all alike (as bench/ab.sh). Wall time of the whole srt run, in µs.
times=$work/times
mkdir -p "$times"
for ((r = 0; r < WARMUP + RUNS; r++)); do
	for k in denywrite-readonly denywrite-writable denywrite-elsewhere denyread; do
		for b in "${bins[@]}"; do
			for t in big small; do
				s=$(date +%s%N)
				(cd "$work/$t" && "${!b}" -s "$work/$k.json" true) >/dev/null 2>&1 || { echo "tree.sh: $b -s $k.json true failed in $t" >&2; exit 1; }
				e=$(date +%s%N)
				((r >= WARMUP)) && echo $(((e - s) / 1000)) >>"$times/$k-$b-$t"
			done
		done
	done
done
median() { sort -n "$1" | awk '{a[NR]=$1} END {printf "%.1f", a[int((NR+1)/2)]/1000}'; }
printf '%-20s %-3s %10s %10s %7s\n' settings bin big_ms small_ms big/small
for k in denywrite-readonly denywrite-writable denywrite-elsewhere denyread; do
	for b in "${bins[@]}"; do
		big=$(median "$times/$k-$b-big")
		small=$(median "$times/$k-$b-small")
		awk -v k="$k" -v b="$b" -v big="$big" -v small="$small" 'BEGIN {printf "%-20s %-3s %10s %10s %7.2f\n", k, b, big, small, big/small}'
	done
done
