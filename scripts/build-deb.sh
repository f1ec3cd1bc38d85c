#!/usr/bin/env bash
# Builds dist/srt-go_<VERSION>_<ARCH>.deb: srt and srtd (static), their man
# pages and shell completions, the settings JSON Schema and a systemd user
# unit for srtd. Usage: scripts/build-deb.sh [VERSION]
# VERSION defaults to 0.1.0+git<commit>; ARCH is GOARCH (amd64, arm64), which
# Debian spells the same. Needs go, dpkg-deb and gzip.
set -euo pipefail
cd "$(dirname "$0")/.."

version=${1:-0.1.0+git$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
if [[ ! $version =~ ^[0-9][A-Za-z0-9.+~-]*$ ]]; then
	echo "build-deb: version $version is not a Debian version (digits first; letters, digits, . + ~ -)" >&2
	exit 2
fi
arch=${GOARCH:-$(go env GOARCH)}
out=dist/srt-go_${version}_${arch}.deb

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/DEBIAN" "$root/usr/bin" "$root/usr/share/man/man1" "$root/usr/share/man/man8" \
	"$root/usr/share/bash-completion/completions" "$root/usr/share/zsh/vendor-completions" \
	"$root/usr/share/fish/vendor_completions.d" "$root/usr/share/srt-go" "$root/usr/share/doc/srt-go" \
	"$root/usr/lib/systemd/user"

# Static: the same binary is the microvm guest's /init (README "microvm backend").
for cmd in srt srtd; do
	CGO_ENABLED=0 GOOS=linux GOARCH=$arch go build -trimpath -ldflags "-s -w -X main.version=$version" \
		-o "$root/usr/bin/$cmd" "./cmd/$cmd"
done

# Man pages, completions and schema come from the sources the binaries
# print them from (checked in too: docs/man, settings/srt-settings.schema.json).
gzip -9n <docs/man/srt.1 >"$root/usr/share/man/man1/srt.1.gz"
gzip -9n <docs/man/srtd.8 >"$root/usr/share/man/man8/srtd.8.gz"
for cmd in srt srtd; do
	run=("$root/usr/bin/$cmd")
	[[ $arch == "$(go env GOHOSTARCH)" ]] || run=(go run "./cmd/$cmd") # cross-built
	"${run[@]}" --completion bash >"$root/usr/share/bash-completion/completions/$cmd"
	"${run[@]}" --completion zsh >"$root/usr/share/zsh/vendor-completions/_$cmd"
	"${run[@]}" --completion fish >"$root/usr/share/fish/vendor_completions.d/$cmd.fish"
done
cp settings/srt-settings.schema.json "$root/usr/share/srt-go/"
cp scripts/deb/srtd.service "$root/usr/lib/systemd/user/srtd.service"
cp scripts/deb/copyright "$root/usr/share/doc/srt-go/copyright"
find "$root" -type d -exec chmod 0755 {} +
find "$root/usr/share" "$root/usr/lib" -type f -exec chmod 0644 {} +
chmod 0755 "$root/usr/bin/"*

# The microvm backend needs QEMU and a guest kernel (README "microvm
# backend"): QEMU alone does not make it work, so it is only suggested.
suggests=""
[[ $arch == amd64 ]] && suggests="Suggests: qemu-system-x86"
cat >"$root/DEBIAN/control" <<CONTROL
Package: srt-go
Version: $version
Architecture: $arch
Maintainer: srt-go developers <srt-go@users.noreply.github.com>
Installed-Size: $(du -sk --exclude=DEBIAN "$root" | cut -f1)
Depends: bubblewrap
${suggests}
Section: utils
Priority: optional
Homepage: https://github.com/srt-go/srt
Description: sandbox runtime: run commands under a filesystem and network policy
 srt runs a command in a sandbox (bubblewrap, seccomp and a PID 1 of its
 own) that enforces the filesystem and network policy of a settings file,
 with the reference srt's command line and settings format. srtd serves
 sandboxed sessions, execs and terminals over a loopback HTTP API.
CONTROL
sed -i '/^$/d' "$root/DEBIAN/control"
(cd "$root" && find usr -type f -exec md5sum {} + | sort -k2) >"$root/DEBIAN/md5sums"
chmod 0644 "$root/DEBIAN/control" "$root/DEBIAN/md5sums"

mkdir -p dist
dpkg-deb --build --root-owner-group -Zxz "$root" "$out" >/dev/null
echo "$out"
