#!/usr/bin/env bash
# bench/creation-kernel.sh: the creation-time rules on both paths in one
# run: no srt, rules off, rules on through the supervisor
# (the default), rules on through the in-kernel BPF LSM program
# (SRT_NAME_RULES=kernel, where srt --check then says it is in use), with the workloads of
# bench/creation-ab.sh (untar, git clone, compile-like), every variant
# once per round. Run as root.
#
#   DIR=/mnt/tmpfs bench/creation-kernel.sh
#
# Environment as bench/creation-ab.sh (SRT, FILES, ROUNDS, WORKLOADS).
set -euo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
srt=${SRT:-}
if [[ -z $srt ]]; then
	srt=$(mktemp -d)/srt
	(cd "$here/.." && go build -tags srt_bpflsm -o "$srt" ./cmd/srt)
fi
line=$(SRT_NAME_RULES=kernel "$srt" --check 2>&1 | grep 'creation-time rules path' || true)
echo "$line"
variants='nosrt off onS'
if [[ $line == *'kernel (BPF LSM)'* && $line != *'not available'* ]]; then
	variants="$variants onK"
else
	echo "creation-kernel.sh: no in-kernel path here; measuring the supervisor only" >&2
fi
SRT=$srt VARIANTS=$variants ENV_onK=SRT_NAME_RULES=kernel exec "$here/creation-ab.sh"
