#!/usr/bin/env bash
# Installs what srt and its tests need on a Debian/Ubuntu machine. As root it
# installs the packages; otherwise it only checks and says what is missing.
set -euo pipefail

pkgs=(bubblewrap git curl ca-certificates python3 procps bsdutils tmux jq hyperfine time
      openssh-client openssh-server passwd util-linux nodejs npm
      qemu-system-x86 busybox-static xz-utils python3-requests openssl
      python3-botocore awscli chromium
      bash-completion zsh fish groff-base man-db)

missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# The machine may carry its own Node.js outside Debian's packages.
if command -v node >/dev/null && command -v npm >/dev/null; then
	missing=("${missing[@]/nodejs}"); missing=("${missing[@]/npm}")
fi
missing=($(printf '%s\n' "${missing[@]}" | grep -v '^$' || true))

if ((${#missing[@]})); then
	if [[ $(id -u) -ne 0 ]]; then
		echo "setup: missing packages: ${missing[*]}; install them as root (apt-get install -y ${missing[*]})" >&2
		exit 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
command -v go >/dev/null || { echo "setup: Go is not installed (https://go.dev/dl/)" >&2; exit 1; }

# The web console's browser test (e2e/console): playwright-core at the
# version its package-lock.json pins, from the npm registry; it drives
# Debian's chromium above and downloads no browser.
(cd "$(dirname "$0")/../e2e/console" && npm ci --no-audit --no-fund --silent)

# The microvm backend's guest kernel: Debian's linux-image-amd64, fetched
# with apt-get download and cached in /var/cache/srt-microvm (about 70 MB,
# once). It needs the package lists.
if [[ $(id -u) -eq 0 ]]; then
	[[ -n $(find /var/lib/apt/lists -maxdepth 1 -name '*Packages*' -print -quit 2>/dev/null) ]] || apt-get update -qq
	(cd "$(dirname "$0")/.." && go run ./microvm/internal/prepare)
fi
