#!/usr/bin/env bash
# srtd start-up (issue 16): time from exec to the first 200 on /healthz, and
# to the microvm probe's verdict in /v1/probe, for a BEFORE srtd (default
# the main branch) and this tree's, runs alternated, median of RUNS.
# Both are built static (CGO_ENABLED=0), so that the microvm probe really
# test-boots a VM (a dynamic srtd cannot be the guest's /init and is
# refused at once).
#
#   bash bench/srtd-healthz.sh            # BEFORE=main RUNS=5
#   BEFORE=<commit> RUNS=9 bash bench/srtd-healthz.sh
#
# Needs curl, bubblewrap and QEMU (qemu-system-x86_64); run as root (the
# guest kernel cache is /var/cache/srt-microvm).
set -euo pipefail
export LC_ALL=C
cd "$(dirname "$0")/.."
BEFORE=${BEFORE:-main}
RUNS=${RUNS:-5}
PORT=${PORT:-17931}
work=$(mktemp -d /tmp/srtd-healthz.XXXXXX)
trap 'rm -rf "$work"' EXIT

mkdir "$work/before"
git archive "$BEFORE" | tar -x -C "$work/before"
(cd "$work/before" && CGO_ENABLED=0 go build -o "$work/srtd-before" ./cmd/srtd)
CGO_ENABLED=0 go build -o "$work/srtd-after" ./cmd/srtd

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# one BIN: prints "healthz_ms verdict_ms"
one() {
	local bin=$1 t0 th="" tv="" tok
	rm -f "$work/token"
	t0=$(now_ms)
	"$bin" --addr "127.0.0.1:$PORT" --token-file "$work/token" 2>"$work/log" &
	local pid=$!
	while :; do
		if [[ -z $th ]] && curl -fs -o /dev/null "http://127.0.0.1:$PORT/healthz"; then th=$(($(now_ms) - t0)); fi
		if [[ -n $th ]]; then
			tok=$(cat "$work/token" 2>/dev/null || true)
			if curl -fs -H "Authorization: Bearer $tok" "http://127.0.0.1:$PORT/v1/probe" | grep -q '"microvmAvailable":true'; then
				tv=$(($(now_ms) - t0))
				break
			fi
		fi
		if (($(now_ms) - t0 > 180000)); then echo "srtd-healthz.sh: no verdict after 180 s" >&2; cat "$work/log" >&2; exit 1; fi
		# Poll /healthz closely, the verdict less (the test boot needs the CPU).
		if [[ -z $th ]]; then sleep 0.005; else sleep 0.1; fi
	done
	kill -TERM "$pid"
	wait "$pid" || true
	echo "$th $tv"
}

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

: >"$work/before.txt"
: >"$work/after.txt"
for ((i = 1; i <= RUNS; i++)); do
	for v in before after; do
		r=$(one "$work/srtd-$v")
		echo "run $i $v: healthz ${r% *} ms, microvm verdict ${r#* } ms" >&2
		echo "$r" >>"$work/$v.txt"
	done
done
printf '%-8s %20s %28s\n' "" "exec->/healthz 200" "exec->microvm available"
for v in before after; do
	printf '%-8s %17s ms %25s ms\n' "$v" "$(cut -d' ' -f1 "$work/$v.txt" | median)" "$(cut -d' ' -f2 "$work/$v.txt" | median)"
done
echo "(median of $RUNS; before = $BEFORE $(git rev-parse --short "$BEFORE"), after = $(git rev-parse --short HEAD)$(git diff --quiet || echo '+dirty'))"
