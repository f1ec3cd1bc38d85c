#!/usr/bin/env bash
# bench/startup.sh: how long `srt true` takes and how much memory srt uses,
# next to `true` and to a bare bwrap with the same namespaces and mounts class,
# all measured in one run on the same machine.
#
#   bench/startup.sh                 # print the table
#   OUT=results.json bench/startup.sh  # also write the results as JSON
#
# Environment:
#   OUT    write the results as JSON here
#   SRT    use this srt binary instead of building one from the repository
#   RUNS   hyperfine runs per command (default 40); WARMUP (default 5)
#   KEEP=1 keep the temporary directory
#
# As root, missing tools are installed with apt-get; otherwise the script says
# what to install and stops. It works unprivileged as long as bwrap can create
# user namespaces.
set -euo pipefail
export LC_ALL=C

RUNS=${RUNS:-40}
WARMUP=${WARMUP:-5}
RSS_RUNS=10

# Targets from the issue, and what the reference srt measured on this kind of
# machine.
TARGET_MS=15
TARGET_RATIO=3
TARGET_MB=20
REF_MS=332
REF_MB=65

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [[ -n ${OUT:-} && $OUT != /* ]]; then OUT=$PWD/$OUT; fi
repo=$(cd "$here/.." && pwd)

die() { echo "startup.sh: $*" >&2; exit 1; }
note() { echo "startup.sh: $*" >&2; }

# --- 1. tools ---------------------------------------------------------------

# command -> Debian package
declare -A pkg_of=([hyperfine]=hyperfine [/usr/bin/time]=time [bwrap]=bubblewrap)
missing=()
for c in hyperfine /usr/bin/time bwrap; do
	command -v "$c" >/dev/null 2>&1 || missing+=("${pkg_of[$c]}")
done
have_jq=0
command -v jq >/dev/null 2>&1 && have_jq=1
if ((have_jq == 0)) && ! command -v python3 >/dev/null 2>&1; then
	missing+=(jq)
fi
if ((have_jq == 0)) && [[ $(id -u) == 0 ]]; then
	# jq is optional (python3 also works) but cheap; install it as root.
	[[ " ${missing[*]} " == *" jq "* ]] || missing+=(jq)
fi
if ((${#missing[@]})); then
	if [[ $(id -u) == 0 ]]; then
		note "installing ${missing[*]}"
		export DEBIAN_FRONTEND=noninteractive
		apt-get install -y "${missing[@]}" >/dev/null ||
			{ apt-get update >/dev/null && apt-get install -y "${missing[@]}" >/dev/null; } ||
			die "apt-get install ${missing[*]} failed"
	else
		die "missing tools; install them first: sudo apt-get install -y ${missing[*]}"
	fi
fi
command -v jq >/dev/null 2>&1 && have_jq=1
bwrap=$(command -v bwrap)

work=$(mktemp -d "${TMPDIR:-/tmp}/srt-bench.XXXXXX")
cleanup() {
	if [[ ${KEEP:-0} == 1 ]]; then
		note "kept $work"
	else
		chmod -R u+w "$work" 2>/dev/null || true
		rm -rf "$work"
	fi
}
trap cleanup EXIT

if [[ -n ${SRT:-} ]]; then
	srt=$(cd "$(dirname "$SRT")" && pwd)/$(basename "$SRT")
	[[ -x $srt ]] || die "SRT=$SRT is not executable"
else
	command -v go >/dev/null 2>&1 || die "go is needed to build srt (or set SRT=/path/to/srt)"
	srt=$work/srt
	# An unprivileged user may have no writable Go build cache.
	if ! gocache=$(go env GOCACHE 2>/dev/null) || ! mkdir -p "$gocache" 2>/dev/null || [[ ! -w $gocache ]]; then
		export GOCACHE=$work/go-build
	fi
	if ! modcache=$(go env GOMODCACHE 2>/dev/null) ||
		{ ! [[ -d $modcache && -r $modcache && -x $modcache ]] && ! mkdir -p "$modcache" 2>/dev/null; }; then
		export GOMODCACHE=$work/go-mod # modules come from the proxy then
	fi
	note "building srt from $repo"
	if ! (cd "$repo" && go build -trimpath -o "$srt" ./cmd/srt) 2>"$work/build.err"; then
		# Typically git refusing a repository owned by another user, which
		# breaks VCS stamping; the stamp does not matter here.
		note "go build failed ($(tail -n1 "$work/build.err")); retrying with -buildvcs=false"
		(cd "$repo" && go build -trimpath -buildvcs=false -o "$srt" ./cmd/srt) ||
			die "cannot build srt"
	fi
fi

# --- 2. a realistic working directory ---------------------------------------

home=$work/home # empty: no ~/.srt-settings.json, no ~/.npm, ...
cwd=$work/project
mkdir -p "$home" "$cwd/src" "$cwd/docs"
settings=$work/settings.json
printf '%s\n' '{"filesystem":{"allowWrite":["."]}}' >"$settings"
(
	cd "$cwd"
	git init -q .
	printf 'package main\n\nfunc main() {}\n' >src/main.go
	printf '# project\n' >README.md
	printf 'notes\n' >docs/notes.md
	printf '*.o\n' >.gitignore
	git add .
	git -c user.name=bench -c user.email=bench@example.invalid -c commit.gpgsign=false \
		commit -q -m initial
)
export HOME=$home
unset XDG_CONFIG_HOME XDG_CACHE_HOME 2>/dev/null || true

# Every measured srt must actually run; fail loudly rather than time an error.
cd "$cwd"
"$srt" true || die "srt true fails (exit $?)"
"$srt" -s "$settings" true || die "srt -s settings true fails (exit $?)"
"$bwrap" --unshare-user --unshare-pid --unshare-net --unshare-ipc --unshare-uts \
	--unshare-cgroup-try --die-with-parent --new-session --as-pid-1 --cap-drop ALL \
	--disable-userns --ro-bind / / --dev /dev --proc /proc true ||
	die "bare bwrap fails; are unprivileged user namespaces enabled?"

# --- 3. timing ----------------------------------------------------------------

names=(true bwrap srt srt_settings)
declare -A label=(
	[true]="true"
	[bwrap]="bwrap (same namespaces/mounts class)"
	[srt]="srt true (defaults, no settings file)"
	[srt_settings]="srt -s settings true (git repo)"
)
declare -A cmdline=(
	[true]="true"
	[bwrap]="$bwrap --unshare-user --unshare-pid --unshare-net --unshare-ipc --unshare-uts --unshare-cgroup-try --die-with-parent --new-session --as-pid-1 --cap-drop ALL --disable-userns --ro-bind / / --dev /dev --proc /proc true"
	[srt]="$srt true"
	[srt_settings]="$srt -s $settings true"
)
for n in "${names[@]}"; do
	note "timing: ${label[$n]}"
	hyperfine -N --warmup "$WARMUP" --runs "$RUNS" --style none \
		--export-json "$work/$n.json" "${cmdline[$n]}" >/dev/null
done

# stats FILE -> "median p10 p90 mean min max" in ms (percentiles by linear
# interpolation between order statistics)
stats() {
	if ((have_jq)); then
		jq -r '
			def pct($t; $p): ($p * (($t|length) - 1)) as $r | ($r|floor) as $lo | ($r|ceil) as $hi
				| $t[$lo] + ($t[$hi] - $t[$lo]) * ($r - $lo);
			.results[0].times | sort as $t
			| [pct($t; 0.5), pct($t; 0.1), pct($t; 0.9), (add / length), $t[0], $t[-1]]
			| map(. * 1000) | map(tostring) | join(" ")' "$1" | xargs printf '%.2f %.2f %.2f %.2f %.2f %.2f\n'
	else
		python3 - "$1" <<-'EOF'
			import json, sys
			t = sorted(json.load(open(sys.argv[1]))["results"][0]["times"])
			def pct(p):
			    r = p * (len(t) - 1); lo = int(r); hi = min(lo + 1, len(t) - 1)
			    return t[lo] + (t[hi] - t[lo]) * (r - lo)
			v = [pct(.5), pct(.1), pct(.9), sum(t) / len(t), t[0], t[-1]]
			print(" ".join("%.2f" % (x * 1000) for x in v))
		EOF
	fi
}
# calc EXPR: floating-point arithmetic
calc() { awk "BEGIN { printf \"%.2f\", $1 }"; }

declare -A med p10 p90 mean min max
for n in "${names[@]}"; do
	read -r med[$n] p10[$n] p90[$n] mean[$n] min[$n] max[$n] < <(stats "$work/$n.json")
done
ratio=$(calc "${med[srt]} / ${med[bwrap]}")
ratio_settings=$(calc "${med[srt_settings]} / ${med[bwrap]}")

# --- 4. memory ----------------------------------------------------------------

# Peak RSS of srt's own process by /usr/bin/time: ru_maxrss from wait4 is the
# largest single process among srt and the descendants it reaped (a max, not a
# sum), which here is srt itself.
maxrss_median() { # args... -> median peak RSS in MB over RSS_RUNS runs
	local i kb=()
	for ((i = 0; i < RSS_RUNS; i++)); do
		/usr/bin/time -f %M -o "$work/time.out" "$@" >/dev/null
		kb+=("$(tail -n1 "$work/time.out")")
	done
	printf '%s\n' "${kb[@]}" | sort -n | awk '{ v[NR] = $1 } END {
		m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		printf "%.1f", m / 1024 }'
}
note "peak RSS: /usr/bin/time over $RSS_RUNS runs"
rss_srt=$(maxrss_median "$srt" true)
rss_srt_settings=$(maxrss_median "$srt" -s "$settings" true)
rss_bwrap=$(maxrss_median "$bwrap" --unshare-user --unshare-pid --unshare-net --unshare-ipc \
	--unshare-uts --unshare-cgroup-try --die-with-parent --new-session --as-pid-1 \
	--cap-drop ALL --disable-userns --ro-bind / / --dev /dev --proc /proc true)

# The sandbox's PID 1 and the placeholder guardian are separate processes
# (srt's binary run with --srt-init / --srt-guardian); time(1) does not add
# them up. Sample /proc while `srt ... sleep 1` runs and keep, per role, the
# largest VmRSS seen and the last VmHWM (the kernel's own peak).
kb_field() { # FIELD PID -> kB, or nothing if the process is gone
	awk -v f="$1:" '$1 == f { print $2; exit }' "/proc/$2/status" 2>/dev/null || true
}
children() { # PID -> its children (all threads' children)
	cat /proc/"$1"/task/*/children 2>/dev/null || true
}
role_of() { # PID -> init | guardian | bwrap | cmd (nothing if gone)
	local -a argv
	mapfile -d '' -t argv 2>/dev/null <"/proc/$1/cmdline" || return 0
	((${#argv[@]})) || return 0
	# bwrap's own command line also holds --srt-init: look at argv[0] first.
	case ${argv[0]##*/}:${argv[1]:-} in
	bwrap:*) echo bwrap ;;
	*:--srt-init) echo init ;;
	*:--srt-guardian) echo guardian ;;
	*) echo cmd ;;
	esac
}
# sample_tree ARGS... -> "srt_rss srt_hwm guardian_rss guardian_hwm init_rss init_hwm bwrap_rss bwrap_hwm" (kB)
sample_tree() {
	local -A rss=() hwm=()
	local top pid r v queue kids
	"$@" >/dev/null &
	top=$!
	while kill -0 "$top" 2>/dev/null; do
		queue=("$top")
		while ((${#queue[@]})); do
			pid=${queue[0]}
			queue=("${queue[@]:1}")
			kids=$(children "$pid")
			[[ -n $kids ]] && read -r -a more <<<"$kids" && queue+=("${more[@]}")
			if [[ $pid == "$top" ]]; then
				r=srt
			else
				# Not cached: a child seen between fork and exec still
				# shows srt's command line.
				r=$(role_of "$pid")
			fi
			[[ -n $r ]] || continue
			v=$(kb_field VmRSS "$pid")
			[[ -n $v ]] && ((v > ${rss[$r]:-0})) && rss[$r]=$v
			v=$(kb_field VmHWM "$pid")
			[[ -n $v ]] && ((v > ${hwm[$r]:-0})) && hwm[$r]=$v
		done
		sleep 0.05
	done
	wait "$top" || die "sampled run failed: $*"
	echo "${rss[srt]:-0} ${hwm[srt]:-0} ${rss[guardian]:-0} ${hwm[guardian]:-0}" \
		"${rss[init]:-0} ${hwm[init]:-0} ${rss[bwrap]:-0} ${hwm[bwrap]:-0}"
}
note "sampling /proc during srt sleep 1"
read -r s_srt_rss s_srt_hwm s_g_rss s_g_hwm s_i_rss s_i_hwm s_b_rss s_b_hwm \
	< <(sample_tree "$srt" -s "$settings" sleep 1)
read -r d_srt_rss d_srt_hwm d_g_rss d_g_hwm d_i_rss d_i_hwm d_b_rss d_b_hwm \
	< <(sample_tree "$srt" sleep 1)
mb() { calc "$1 / 1024"; }
sum_rss_settings=$(mb $((s_srt_rss + s_g_rss + s_i_rss)))
sum_hwm_settings=$(mb $((s_srt_hwm + s_g_hwm + s_i_hwm)))
sum_rss_default=$(mb $((d_srt_rss + d_g_rss + d_i_rss)))
sum_hwm_default=$(mb $((d_srt_hwm + d_g_hwm + d_i_hwm)))

# --- 5. report ----------------------------------------------------------------

verdict() { # CONDITION(awk) -> ok | MISS
	awk "BEGIN { exit !($1) }" && echo ok || echo MISS
}
cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || echo unknown)
echo
echo "srt startup benchmark  $(date -u +%Y-%m-%dT%H:%M:%SZ)  $(uname -r)  $(nproc) CPU  $cpu"
echo "srt: $srt ($(git -C "$repo" -c safe.directory="$repo" rev-parse --short HEAD 2>/dev/null || echo '?'))  bwrap: $("$bwrap" --version 2>/dev/null | head -n1)"
echo "cwd: git repo in $cwd, HOME=$home (empty); hyperfine -N, $WARMUP warmup, $RUNS runs"
echo
printf '%-40s %9s %9s %9s %9s\n' "command" "median" "p10" "p90" "mean"
printf '%-40s %9s %9s %9s %9s\n' "" "ms" "ms" "ms" "ms"
for n in "${names[@]}"; do
	printf '%-40s %9s %9s %9s %9s\n' "${label[$n]}" "${med[$n]}" "${p10[$n]}" "${p90[$n]}" "${mean[$n]}"
done
echo
printf '%-40s %9s\n' "ratio srt/bwrap (medians), defaults" "${ratio}x"
printf '%-40s %9s\n' "ratio srt/bwrap (medians), settings" "${ratio_settings}x"
echo
echo "peak RSS, /usr/bin/time -f %M, median of $RSS_RUNS runs (srt's own process; the"
echo "largest single process it reaped, not a sum):"
printf '  %-38s %7s MB\n' "srt true" "$rss_srt" "srt -s settings true" "$rss_srt_settings" "bare bwrap" "$rss_bwrap"
echo
echo "RSS sampled from /proc/PID/status during 'srt ... sleep 1' (MB, VmRSS max / VmHWM):"
printf '  %-24s %16s %16s\n' "" "settings (repo)" "defaults"
row() { printf '  %-24s %7s / %6s %7s / %6s\n' "$1" "$(mb "$2")" "$(mb "$3")" "$(mb "$4")" "$(mb "$5")"; }
row "srt" "$s_srt_rss" "$s_srt_hwm" "$d_srt_rss" "$d_srt_hwm"
row "guardian" "$s_g_rss" "$s_g_hwm" "$d_g_rss" "$d_g_hwm"
row "sandbox PID 1 (srt-init)" "$s_i_rss" "$s_i_hwm" "$d_i_rss" "$d_i_hwm"
printf '  %-24s %7s / %6s %7s / %6s\n' "sum srt+guardian+PID 1" \
	"$sum_rss_settings" "$sum_hwm_settings" "$sum_rss_default" "$sum_hwm_default"
row "(bwrap, not in sum)" "$s_b_rss" "$s_b_hwm" "$d_b_rss" "$d_b_hwm"
((d_g_rss == 0)) && echo "  (no guardian without a settings file: no placeholders to guard)"
echo
echo "targets (issue): reference srt measured ${REF_MS} ms and ${REF_MB} MB on this machine kind"
printf '  %-40s %-8s %s\n' \
	"srt true < ${TARGET_MS} ms" "$(verdict "${med[srt]} < $TARGET_MS")" "${med[srt]} ms (settings: ${med[srt_settings]} ms $(verdict "${med[srt_settings]} < $TARGET_MS"))" \
	"within ${TARGET_RATIO}x of bare bwrap" "$(verdict "$ratio <= $TARGET_RATIO")" "${ratio}x (settings: ${ratio_settings}x $(verdict "$ratio_settings <= $TARGET_RATIO"))" \
	"peak RSS < ${TARGET_MB} MB (srt process)" "$(verdict "$rss_srt < $TARGET_MB")" "$rss_srt MB (settings: $rss_srt_settings MB)" \
	"  all three processes, settings run" "$(verdict "$sum_hwm_settings < $TARGET_MB")" "$sum_hwm_settings MB (sum of VmHWM)"
printf '  %-40s %-8s %s\n' "vs reference srt" "" \
	"$(calc "$REF_MS / ${med[srt]}")x faster, $(calc "$REF_MB / $rss_srt")x less memory"

if [[ -n ${OUT:-} ]]; then
	cmd_json() {
		local n=$1
		printf '{"label":"%s","command":"%s","median_ms":%s,"p10_ms":%s,"p90_ms":%s,"mean_ms":%s,"min_ms":%s,"max_ms":%s}' \
			"${label[$n]}" "${cmdline[$n]}" "${med[$n]}" "${p10[$n]}" "${p90[$n]}" "${mean[$n]}" "${min[$n]}" "${max[$n]}"
	}
	proc_json() { printf '{"vmrss_kb":%s,"vmhwm_kb":%s}' "$1" "$2"; }
	{
		printf '{"date":"%s","kernel":"%s","cpus":%s,"cpu":"%s",' \
			"$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$(uname -r)" "$(nproc)" "$cpu"
		printf '"srt_commit":"%s","runs":%s,"warmup":%s,"timing":{' \
			"$(git -C "$repo" -c safe.directory="$repo" rev-parse HEAD 2>/dev/null || true)" "$RUNS" "$WARMUP"
		sep=
		for n in "${names[@]}"; do printf '%s"%s":%s' "$sep" "$n" "$(cmd_json "$n")"; sep=,; done
		printf '},"ratio_srt_bwrap":%s,"ratio_srt_settings_bwrap":%s,' "$ratio" "$ratio_settings"
		printf '"peak_rss_mb":{"srt":%s,"srt_settings":%s,"bwrap":%s,"runs":%s},' \
			"$rss_srt" "$rss_srt_settings" "$rss_bwrap" "$RSS_RUNS"
		printf '"sampled":{"settings":{"srt":%s,"guardian":%s,"init":%s,"bwrap":%s,"sum_vmrss_mb":%s,"sum_vmhwm_mb":%s},' \
			"$(proc_json "$s_srt_rss" "$s_srt_hwm")" "$(proc_json "$s_g_rss" "$s_g_hwm")" \
			"$(proc_json "$s_i_rss" "$s_i_hwm")" "$(proc_json "$s_b_rss" "$s_b_hwm")" \
			"$sum_rss_settings" "$sum_hwm_settings"
		printf '"defaults":{"srt":%s,"guardian":%s,"init":%s,"bwrap":%s,"sum_vmrss_mb":%s,"sum_vmhwm_mb":%s}},' \
			"$(proc_json "$d_srt_rss" "$d_srt_hwm")" "$(proc_json "$d_g_rss" "$d_g_hwm")" \
			"$(proc_json "$d_i_rss" "$d_i_hwm")" "$(proc_json "$d_b_rss" "$d_b_hwm")" \
			"$sum_rss_default" "$sum_hwm_default"
		printf '"targets":{"srt_true_ms":%s,"ratio":%s,"rss_mb":%s,"reference_ms":%s,"reference_mb":%s}}\n' \
			"$TARGET_MS" "$TARGET_RATIO" "$TARGET_MB" "$REF_MS" "$REF_MB"
	} >"$work/out.json"
	if ((have_jq)); then jq . "$work/out.json" >"$OUT"; else python3 -m json.tool "$work/out.json" >"$OUT"; fi
	note "wrote $OUT"
fi
