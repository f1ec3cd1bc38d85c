#!/usr/bin/env bash
# bench/creation-ab.sh: the workloads of bench/creation.sh (untar, git
# clone, compile-like), every variant run once per round, round after
# round, so that the machine's noise falls on all alike.
#
#   DIR=/mnt/tmpfs bench/creation-ab.sh   # a tmpfs the sandbox sees (not /dev/shm, its own)
#   VARIANTS='nosrt on onB' BIN_onB=/tmp/other/srt DIR=/mnt/tmpfs bench/creation-ab.sh
#
# Variants (VARIANTS, default "nosrt off on"), by how their name begins:
# nosrt (the command alone), off (srt, filesystem.enforceNamesAtCreation
# false), on (srt, creation-time rules); ENV_<variant> is the variant's
# environment and BIN_<variant> its srt binary (default $SRT), e.g.
# VARIANTS='nosrt on onB' BIN_onB=/tmp/other/srt. Environment: SRT
# (binary; default: build one), FILES (default 10000), WORKLOADS (default
# "untar clone compile"), ROUNDS (default 7), PERF=1 (also one run per
# variant under perf stat -e context-switches,cpu-migrations, counted
# over srt and everything it starts).
#
# Prints each variant's median wall time, its ratio to nosrt's and every
# run's time in ms, in order.
set -euo pipefail
export LC_ALL=C
FILES=${FILES:-10000}
ROUNDS=${ROUNDS:-7}
WORKLOADS=${WORKLOADS:-untar clone compile}
VARIANTS=${VARIANTS:-nosrt off on}
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_setup creation-ab
bench_tree "$FILES" 100 512

creation_workloads
# Moved aside, not removed: see bench/creation.sh.
reset() { mv "$out" "$work/old/$(date +%s%N)" && mkdir "$out"; }

# run VARIANT WORKLOAD [PREFIX...]: runs it once.
run() {
	local v=$1 w=$2 c envv binv bin
	shift 2
	c="cmd_$w" envv="ENV_$v" binv="BIN_$v"
	bin=${!binv:-$srt}
	case $v in
	nosrt*) env ${!envv:-} "$@" ${!c} ;;
	off*) env ${!envv:-} "$@" "$bin" -s "$work/off.json" -- ${!c} ;;
	on*) env ${!envv:-} "$@" "$bin" -s "$work/on.json" -- ${!c} ;;
	*) echo "creation-ab.sh: unknown variant $v" >&2; exit 2 ;;
	esac
}

for w in $WORKLOADS; do
	for v in $VARIANTS; do reset; run "$v" "$w"; done # warm-up
	for r in $(seq "$ROUNDS"); do
		for v in $VARIANTS; do
			reset
			s=$(date +%s%N)
			run "$v" "$w" >/dev/null
			e=$(date +%s%N)
			echo $(((e - s) / 1000)) >>"$work/t.$w.$v"
		done
	done
done
median() { sort -n "$1" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
printf '%-8s %-6s %10s %8s  (load %s)\n' workload variant 'median ms' '/ nosrt' "$(cut -d' ' -f1-3 /proc/loadavg)"
for w in $WORKLOADS; do
	base=
	[[ -f $work/t.$w.nosrt ]] && base=$(median "$work/t.$w.nosrt")
	for v in $VARIANTS; do
		m=$(median "$work/t.$w.$v")
		awk -v w="$w" -v v="$v" -v m="$m" -v b="$base" 'BEGIN {
			r = b ? sprintf("%.2fx", m / b) : "-"
			printf "%-8s %-6s %10.0f %8s", w, v, m / 1000, r }'
		# each run, in ms, in order
		awk '{printf " %d", $1 / 1000} END {print ""}' "$work/t.$w.$v"
	done
done
if [[ ${PERF:-} == 1 ]]; then
	for w in $WORKLOADS; do
		for v in $VARIANTS; do
			reset
			run "$v" "$w" perf stat -x, -o "$work/perf" -e context-switches,cpu-migrations >/dev/null
			printf '%-8s %-6s %s\n' "$w" "$v" "$(awk -F, '/^[0-9]/ {printf "%s %s  ", $1, $3}' "$work/perf")"
		done
	done
fi
