#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# seeds.sh [-n SEEDS] [-f FIRST] [-c OPS] [-r RATES] [-P] [-o DIR] [BACKEND...]:
# the mirror churn of tests/mirror-churn.sh section 5 (deep chains, exchanges
# with unseen places) over many seeds, per backend and rate (a benchmark, not
# a test: it takes about an hour for the whole matrix).
#
# BACKEND: inotify, fanotify (inode marks: as user nobody, as make check runs
# the mirror's tests), fanotify-fs (filesystem marks: as root, on a tmpfs in
# a mount namespace of its own, NOTIFYX_FANOTIFY_INODE_MAX=0), dnotify, poll;
# default all five.  RATES: ordinary,unthrottled (the default: both).
# For each backend, rate and seed FIRST..FIRST+SEEDS-1 (default 1..20), a
# run of its own, in a fresh work directory:
#   - a tree whose absolute path is about 2400 characters long (churn -D
#     grows chains up to 3000 characters below it: beyond PATH_MAX);
#   - initial content: churn -D -s 1000+SEED -n 300 -p 0;
#   - examples/mirror -e '*.tmp' starts, lists it and syncs;
#   - churn -v -x -D -U -s SEED -n OPS (default 2000): at churn's own pacing
#     ("ordinary": 1 ms every 10 operations) or flat out ("unthrottled",
#     -p 0); its operations, in a form that reads as shell commands, go to
#     the work directory (churn.ops);
#   - the mirror syncs (SIGUSR1) and its copy is compared with the tree, less
#     the *.tmp entries.
# Unthrottled, the kernel queue may overflow: the mirror then runs with -R
# (NOTIFYX_WATCH_RESCAN: the library repairs the watch and the copy must be
# exact at the sync; without it the mirror drops its copy and lists the tree
# again, which says nothing of the events before the OVERFLOW).  -P runs the
# unthrottled rate without -R.  The OVERFLOWs are recorded; at the ordinary
# rate an OVERFLOW is a failure.
#
# A run fails when the copy differs, on any ERROR event or anomaly, on an
# OVERFLOW at the ordinary rate, or when the mirror dies or does not sync.
# Output, on stdout and in DIR/seeds.txt (DIR default .): one line per failing
# run as it ends, then one summary line per backend and rate: runs, runs
# equal, entries missing in the copy, entries in the copy not on disk,
# OVERFLOWs, ERRORs, anomalies, median and longest seconds of a run (churn
# and sync).  A failing run's work directory is kept (MIRROR_KEEP) and its
# files less the trees (the mirror's event log m.log, churn.ops, init.ops,
# the listings and their diff) are copied to DIR/failed/BACKEND-RATE-sSEED;
# `seeds.sh -f SEED -n 1 -r RATE BACKEND` runs it again.
#
# Run as root from a build directory (top_builddir) after make check:
#   ../bench/seeds.sh -o ../bench/results/seeds
# Exit status 0 when every run passed, else 1.

usage() {
	echo "usage: $0 [-n SEEDS] [-f FIRST] [-c OPS] [-r RATES] [-P] [-o DIR] [BACKEND...]" >&2
	exit 2
}

# ---- one run (the script calls itself, through the backend's wrapper) --------

# one BACKEND RATE SEED OPS RESCAN KEEPDIR: prints its progress, then one line
# "RESULT status missing extra overflows errors anomalies seconds events kept".
one() {
	label=$1 rate=$2 seed=$3 ops=$4 rescan=$5 keepdir=$6
	backend=${label%-fs}
	me="seeds[$label $rate $seed]"
	mirror=$top_builddir/examples/mirror
	churn=$top_builddir/tests/churn
	. "$(dirname "$0")/../tests/mirror-lib.sh"
	missing=- extra=- overflows=- errors=- anomalies=- secs=- events=-
	result() {
		kept=-
		if test "$1" != pass; then
			MIRROR_KEEP=1
			kept=$work
			dest=$keepdir/$label-$rate-s$seed
			if test -n "$keepdir" && rm -rf "$dest" && mkdir -p "$dest" 2>/dev/null; then
				find "$work" -maxdepth 1 -type f -exec cp {} "$dest/" \;
				kept=$dest
				# A private tmpfs goes with its namespace: the copy is all that stays.
				test "$label" = fanotify-fs || kept="$dest $work"
			fi
		fi
		echo "RESULT $1 $missing $extra $overflows $errors $anomalies $secs $events $kept"
	}
	# mirror-lib's fail (the mirror died, did not start or sync) ends the run.
	fail() {
		echo "$me: $*"
		# The log of a mirror that crashed ends in the middle of a line.
		tail -n 20 "$work/m.log" 2>/dev/null && echo
		p=$(pid_of m)
		if test -n "$p" && ! kill -0 "$p" 2>/dev/null; then
			wait "$p"
			echo "$me: the mirror's exit status: $?"
		fi
		result "died:$(echo "$*" | tr ' ' _)"
		exit 1
	}
	deep=$(deep_dir)
	src=$deep/src
	mkdir -p "$src" "$deep/outside" || fail "mkdir failed"
	(cd "$deep" && "$churn" -v -D -s $((1000 + seed)) -n 300 -p 0 src outside \
		>"$work/init.ops" 2>/dev/null) || fail "churn failed"
	r=
	test "$rate" = unthrottled && test "$rescan" = 1 && r=-R
	start m $r -e '*.tmp' -b "$backend" "$src" "$work/copy"
	sync_mirror m
	listing "$src" '*.tmp' >"$work/src.list"
	listing "$work/copy" '*.tmp' >"$work/dst.list"
	cmp -s "$work/src.list" "$work/dst.list" || {
		diff -u "$work/src.list" "$work/dst.list" >"$work/diff"
		fail "the initial listing differs"
	}
	p=
	test "$rate" = unthrottled && p="-p 0"
	t0=$(date +%s%N)
	(cd "$deep" && "$churn" -v -x -D -U -s "$seed" -n "$ops" $p src outside \
		>"$work/churn.ops" 2>"$work/churn.err") || fail "churn failed: $(cat "$work/churn.err")"
	sync_mirror m
	t1=$(date +%s%N)
	secs=$(((t1 - t0) / 10000000))
	secs=$((secs / 100)).$(printf '%02d' $((secs % 100)))
	events=$(grep '^synced' "$work/m.out" | tail -n 1 | sed -n 's/.*events=\([0-9]*\).*/\1/p')
	listing "$src" '*.tmp' >"$work/src.list"
	listing "$work/copy" '*.tmp' >"$work/dst.list"
	missing=$(LC_ALL=C comm -23 "$work/src.list" "$work/dst.list" | wc -l)
	extra=$(LC_ALL=C comm -13 "$work/src.list" "$work/dst.list" | wc -l)
	status=pass
	test "$missing" = 0 && test "$extra" = 0 || status=differs
	test "$errors" = 0 && test "$anomalies" = 0 || status="$status,error"
	test "$rate" = unthrottled || test "$overflows" = 0 || status="$status,overflow"
	status=${status#pass,}
	if test "$status" != pass; then
		diff -u "$work/src.list" "$work/dst.list" >"$work/diff"
		echo "$me: $status (- tree, + copy):"
		sed -n '3,$p' "$work/diff" | grep '^[-+]' | head -n 20
		grep -e 'anomaly' -e 'not watched' "$work/m.log" | head -n 10
	fi
	kill -TERM "$(pid_of m)"
	wait "$(pid_of m)"
	result "$status"
}

: "${top_builddir:=$(pwd)}"
export top_builddir
if test "${1:-}" = --one; then
	shift
	one "$@"
	exit 0
fi

# ---- the matrix -----------------------------------------------------------------

seeds=20 first=1 ops=2000 rates=ordinary,unthrottled rescan=1 out=.
while getopts c:f:n:o:Pr: opt; do
	case $opt in
	c) ops=$OPTARG ;;
	f) first=$OPTARG ;;
	n) seeds=$OPTARG ;;
	o) out=$OPTARG ;;
	P) rescan=0 ;;
	r) rates=$(echo "$OPTARG" | tr , ' ') ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
rates=$(echo "$rates" | tr , ' ')
backends=${*:-inotify fanotify fanotify-fs dnotify poll}
for b in $backends; do
	case $b in inotify | fanotify | fanotify-fs | dnotify | poll) ;; *) usage ;; esac
done
for r in $rates; do
	case $r in ordinary | unthrottled) ;; *) usage ;; esac
done
for p in "$top_builddir/examples/mirror" "$top_builddir/tests/churn"; do
	test -x "$p" || { echo "$0: $p is not built (run make check first)" >&2; exit 2; }
done
test "$(id -u)" = 0 || { echo "$0: run as root (fanotify's marks, a private tmpfs)" >&2; exit 2; }
mkdir -p "$out/failed" || exit 2
out=$(cd "$out" && pwd)
# The fanotify runs as nobody copy their failures there.
chmod 1777 "$out/failed"
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
tests=$(dirname "$self")/../tests
report=$out/seeds.txt

say() {
	echo "$*"
	echo "$*" >>"$report"
}

: >"$report"
say "# seeds.sh: $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -r), $(git -C "$(dirname "$self")" \
	describe --always --dirty 2>/dev/null || echo unknown)"
say "# seeds $first..$((first + seeds - 1)), churn -v -x -D -U -n $ops; ordinary: churn's" \
	"pacing (1 ms every 10 operations); unthrottled: -p 0$(test $rescan = 1 &&
	echo ', the mirror with -R (RESCAN)')"
say "# failing runs: backend rate seed status missing extra overflows errors anomalies seconds kept"
all=0
summary=$(mktemp) || exit 2
trap 'rm -f "$summary"' EXIT
for backend in $backends; do
	for rate in $rates; do
		set -- "$self" --one "$backend" "$rate"
		case $backend in
		fanotify) set -- "$tests/as-nobody.sh" "$@" ;;
		fanotify-fs) set -- "$tests/fanotify-private-tmp.sh" "$@" ;;
		esac
		runs=0 equal=0 miss=0 extr=0 ovf=0 err=0 anom=0 times='' skipped=''
		s=$first
		while test $s -lt $((first + seeds)); do
			log=$("$@" "$s" "$ops" "$rescan" "$out/failed" 2>&1)
			st=$?
			if test $st = 77; then
				skipped=$(echo "$log" | grep -v '^$' | tail -n 1)
				break
			fi
			line=$(echo "$log" | sed -n 's/^RESULT //p' | tail -n 1)
			test -n "$line" || line="died:status_$st - - - - - - - -"
			read -r status m x o e a secs ev kept <<EOF
$line
EOF
			runs=$((runs + 1))
			case $m in [0-9]*) miss=$((miss + m)) ;; esac
			case $x in [0-9]*) extr=$((extr + x)) ;; esac
			case $o in [0-9]*) ovf=$((ovf + o)) ;; esac
			case $e in [0-9]*) err=$((err + e)) ;; esac
			case $a in [0-9]*) anom=$((anom + a)) ;; esac
			case $secs in [0-9]*) times="$times $secs" ;; esac
			if test "$status" = pass; then
				test "$m" = 0 && test "$x" = 0 && equal=$((equal + 1))
			else
				test "$m" = 0 && test "$x" = 0 && equal=$((equal + 1))
				all=1
				say "FAIL $backend $rate $s $status $m $x $o $e $a $secs $kept"
				echo "$log" | grep -v '^RESULT' | head -n 40
			fi
			echo "$backend $rate seed $s: $status ($secs s)" >&2
			s=$((s + 1))
		done
		if test -n "$skipped"; then
			say "$backend $rate: skipped: $skipped"
			continue
		fi
		med=$(for t in $times; do echo "$t"; done | sort -n |
			awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "-" }')
		max=$(for t in $times; do echo "$t"; done | sort -n | tail -n 1)
		printf '%-12s %-12s %5s %6s %8s %6s %10s %7s %10s %9s %8s\n' "$backend" "$rate" \
			"$runs" "$equal" "$miss" "$extr" "$ovf" "$err" "$anom" "$med" "${max:--}" >>"$summary"
	done
done
say ""
say "$(printf '%-12s %-12s %5s %6s %8s %6s %10s %7s %10s %9s %8s' backend rate runs equal \
	missing extra overflows errors anomalies median_s max_s)"
while IFS= read -r l; do say "$l"; done <"$summary"
exit $all
