#!/usr/bin/env bash
# Sets up the machine and runs every test: formatting, vet, the unit tests,
# and the end-to-end suite through the real bubblewrap, as root and as an
# unprivileged user the suite creates. Run as root on a fresh Debian machine.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [[ -n $unformatted ]]; then
	echo "gofmt would change: $unformatted" >&2
	exit 1
fi
echo "== go vet"
go vet ./...
echo "== cross builds (darwin, windows)"
for target in darwin/arm64 darwin/amd64 windows/amd64 linux/arm64; do
	GOOS=${target%/*} GOARCH=${target#*/} go build -o /dev/null ./cmd/srt
	GOOS=${target%/*} GOARCH=${target#*/} go build -o /dev/null ./cmd/srtd
done
GOOS=darwin GOARCH=arm64 go vet ./sandbox/... ./cmd/... ./policy/...
echo "== the experimental in-kernel name rules build (-tags srt_bpflsm)"
go vet -tags srt_bpflsm ./sandbox/linux/... ./cmd/srt
echo "== staticcheck"
go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
echo "== go test"
go test -count=1 -timeout 45m ./...   # e2e: 20+ min under TCG on a slow host (its microvm tests)
