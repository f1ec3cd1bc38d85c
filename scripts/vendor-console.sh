#!/usr/bin/env bash
# Vendors the web console's front-end libraries (server/console/assets/vendor)
# from the npm registry: pinned versions, their dist files and their licences.
# The files are committed, so `go build` needs neither npm nor the network;
# run this only to move a pin (then commit what it wrote).
set -euo pipefail

# package@version  files to copy out of the package (relative to its root)
pins=(
	"@xterm/xterm@6.0.0 lib/xterm.js css/xterm.css LICENSE"
	"@xterm/addon-fit@0.11.0 lib/addon-fit.js LICENSE"
)

root=$(cd "$(dirname "$0")/.." && pwd)
dest=$root/server/console/assets/vendor
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

rm -rf "$dest"
mkdir -p "$dest"
for pin in "${pins[@]}"; do
	read -r spec files <<<"$pin"
	name=${spec%@*}
	dir=$dest/${name#@xterm/}
	mkdir -p "$dir" "$tmp/$name"
	tgz=$(cd "$tmp" && npm pack --silent "$spec")
	tar -xzf "$tmp/$tgz" -C "$tmp/$name" --strip-components=1
	for f in $files; do
		cp "$tmp/$name/$f" "$dir/$(basename "$f")"
	done
	echo "$spec" >"$dir/VERSION"
done
echo "vendored into ${dest#"$root"/}:"
find "$dest" -type f | sort | sed "s|$root/||"
