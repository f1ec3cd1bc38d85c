#!/usr/bin/env bash
# Benchmarks the microvm backend (issue 7): launch-to-ready and exec round
# trip (p50), RSS of one idle VM's QEMU, and how many VMs stay warm at once.
# Run as root from the repository root, with qemu-system-x86 installed.
#
#   bench/microvm.sh                      # Debian stock kernel (the default)
#   SRT_MICROVM_KERNEL=$(microvm/kernel/build-mini.sh) bench/microvm.sh
#   MAX=24 bench/microvm.sh               # capacity run up to 24 VMs (default 16)
#   RUNS=10                               # iterations for the p50 figures
#
# The accelerator is chosen as in production ("auto"); the line "accel:"
# says which one and, for TCG, why KVM was not used. KVM figures can only
# be taken on a host where that line says kvm.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v qemu-system-x86_64 >/dev/null || { echo "install qemu-system-x86" >&2; exit 1; }
RUNS=${RUNS:-10}
export SRT_MICROVM_BENCH_MAX=${MAX:-16}
echo "host: $(nproc) CPUs, $(awk '/MemTotal/{printf "%.0f GiB", $2/1048576}' /proc/meminfo), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "kernel: $(go run ./microvm/internal/prepare)"
go test ./microvm -run '^TestProbe$' -count 1 -v 2>&1 | sed -n 's/.*{Available:\(.*\)}/accel: available=\1/p'
go test ./microvm -run '^$' -bench 'LaunchToReady|ExecRoundTrip|IdleRSS' -benchtime "${RUNS}x" -count 1 | grep -E '^Benchmark'
go test ./microvm -run '^$' -bench 'WarmCapacity' -benchtime 1x -count 1 -timeout 30m | grep -E '^Benchmark|did not boot'
