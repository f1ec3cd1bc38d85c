# bench/lib.sh: what the file-creation benchmarks share. Source it from a
# bench script (bash, set -euo pipefail).

# bench_setup NAME: checks for hyperfine, makes the work directory $work
# (under $DIR, default /tmp; removed on exit) and sets $srt to $SRT or to
# a fresh static build of the repository's srt.
bench_setup() {
	local name=$1 here repo
	here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
	repo=$(cd "$here/.." && pwd)
	command -v hyperfine >/dev/null || { echo "$name.sh: needs hyperfine (apt-get install hyperfine)" >&2; exit 1; }
	work=$(mktemp -d "${DIR:-/tmp}/srt-bench-$name.XXXXXX")
	chmod 755 "$work"
	trap 'rm -rf "$work"' EXIT
	srt=${SRT:-}
	if [[ -z $srt ]]; then
		srt=$work/srt
		(cd "$repo" && CGO_ENABLED=0 go build -o "$srt" ./cmd/srt)
	fi
}

# bench_tree FILES DIRS BYTES: a source tree $work/src of FILES random files
# of BYTES bytes in DIRS directories, also as $work/tree.tar and as a git
# repository with one commit.
bench_tree() {
	local files=$1 dirs=$2 bytes=$3 i d
	src=$work/src
	mkdir -p "$src"
	for ((i = 0; i < files; i++)); do
		d=$src/d$((i % dirs))
		mkdir -p "$d"
		head -c "$bytes" /dev/urandom >"$d/f$i"
	done
	tar -C "$work" -cf "$work/tree.tar" src
	git -C "$src" init -q
	git -C "$src" add -A
	git -C "$src" -c user.name=b -c user.email=b@b commit -q -m tree
}

# creation_workloads: the creation-time rules' three workloads
# (bench/creation.sh, bench/creation-ab.sh), after bench_tree: the output
# directory $out (and $work/old, where a reset moves it), the settings
# $work/off.json (rules off) and $work/on.json (rules on), both with the
# same denyWrite globs, and the commands $cmd_untar, $cmd_clone and
# $cmd_compile (2000 objects, each written to a temporary file and
# renamed into place).
creation_workloads() {
	out=$work/out
	mkdir -p "$out" "$work/old"
	local deny='"denyWrite":["**/.env","**/*.key","**/*.pem","secrets/**"]'
	echo '{"filesystem":{"allowWrite":["'"$out"'"],'"$deny"',"enforceNamesAtCreation":false}}' >"$work/off.json"
	echo '{"filesystem":{"allowWrite":["'"$out"'"],'"$deny"'}}' >"$work/on.json"
	cat >"$work/compile.sh" <<SH
mkdir -p $out/build
for i in \$(seq 1 2000); do
	echo "obj \$i" > $out/build/o\$i.tmp && mv $out/build/o\$i.tmp $out/build/o\$i.o
done
SH
	cmd_untar="tar -C $out -xf $work/tree.tar"
	cmd_clone="git clone -q $src $out/clone"
	cmd_compile="sh $work/compile.sh"
}
