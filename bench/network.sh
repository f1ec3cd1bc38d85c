#!/usr/bin/env bash
# bench/network.sh: srt's egress speed, measured in one run from inside the
# sandbox (through the proxy srt serves on the listeners the sandbox's PID 1
# hands it) and directly on the host: 1 GiB through a CONNECT tunnel (curl),
# connection set-up p50/p99 over 1,000 connections, and 200 concurrent
# connections. Prints a Markdown table (see BenchmarkNetwork in
# e2e/network_bench_test.go for what each row measures).
#
#   bench/network.sh                 # the table
#   SRT_BENCH_MIB=256 bench/network.sh   # a smaller bulk transfer
#   VERBOSE=1 bench/network.sh       # also the go test output and metrics
#
# Needs curl, go and bubblewrap; run it as root or as a user who may create
# user namespaces. Nothing is asserted: speed is measured, never a test.
set -euo pipefail
export LC_ALL=C
cd "$(dirname "$0")/.."
out=$(go test ./e2e -run '^$' -bench '^BenchmarkNetwork$' -benchtime 1x -count 1 2>&1) || {
	echo "$out" >&2
	exit 1
}
if [ -n "${VERBOSE:-}" ]; then
	echo "$out"
else
	echo "$out" | grep '^|'
fi
echo
echo "host: $(nproc) CPUs, $(uname -r), $(go version | cut -d' ' -f3)"
