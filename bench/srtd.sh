#!/usr/bin/env bash
# srtd through its API (issue 6): launch-to-ready latency and exec round
# trip (p50/p99), sessions per second, memory per idle warm session.
# Usage: bash bench/srtd.sh [N]   (N sessions, default 50; needs bubblewrap)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-50}
exec go test ./e2e -run '^TestSrtdBench$' -count=1 -v -srtd.bench="$N" 2>&1 | grep -E '^(srtd-bench|--- |ok|FAIL)'
