#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# soak.sh [-d SECONDS] [-o DIR] [BACKEND...]: a long churn per backend while
# examples/mirror follows the events (a benchmark, not a test).
#
# For each backend (default: every one that starts here), tests/churn changes
# a tree of 1500 to 3000 entries at an ordinary rate for SECONDS (default
# 600) while the mirror keeps its copy; the mirror's resident memory (VmRSS)
# and open descriptors are sampled every second into DIR/soak-BACKEND.tsv.
# At the end the copy must equal the tree.  One summary line per backend goes
# to stdout and DIR/soak.tsv: RSS and descriptors over the first and the last
# minute (medians), the maxima, the events handled, OVERFLOWs, and whether
# the copy matched.  The first half is warm-up (the allocator and the
# library's tables grow to the tree's working size): "flat" means the last
# minute's median RSS is at most 10 % (or 256 KiB) above the highest RSS of
# the first half, and its median descriptor count no higher than the first
# half's highest: a leak makes new highs, a working set does not.
#
# Run from a build directory (top_builddir) after make and make check:
#   ../bench/soak.sh -d 600 -o ../bench/results/soak
# Exit status 0 when every backend stayed flat and matched, else 1.
secs=600
out=.
while getopts d:o: opt; do
	case $opt in
	d) secs=$OPTARG ;;
	o) out=$OPTARG ;;
	*) echo "usage: $0 [-d SECONDS] [-o DIR] [BACKEND...]" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
: "${top_builddir:=$(pwd)}"
mirror=$top_builddir/examples/mirror
churn=$top_builddir/tests/churn
for p in "$mirror" "$churn"; do
	test -x "$p" || { echo "$0: $p is not built (run make check first)" >&2; exit 2; }
done
mkdir -p "$out" || exit 2
out=$(cd "$out" && pwd)
backends=${*:-inotify fanotify dnotify poll}
me=soak
backend=
. "$(dirname "$0")/../tests/mirror-lib.sh"

# sample PID FILE: "second rss_kib fds" every second until PID is gone.
sample() {
	t=0
	while kill -0 "$1" 2>/dev/null; do
		rss=$(sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\).*/\1/p' "/proc/$1/status" 2>/dev/null)
		fds=$(ls "/proc/$1/fd" 2>/dev/null | wc -l)
		test -n "$rss" && printf '%d\t%s\t%s\n' "$t" "$rss" "$fds" >>"$2"
		t=$((t + 1))
		sleep 1
	done
}

# median FILE COLUMN FIRST LAST: median of a column over rows FIRST..LAST.
median() {
	awk -v c="$2" -v a="$3" -v b="$4" '$1 >= a && $1 <= b { print $c }' "$1" | sort -n |
		awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print 0 }'
}

status=0
printf 'backend\tseconds\trss_first_kib\trss_last_kib\trss_max_kib\tfds_first\tfds_last\tfds_max\tevents\toverflows\tentries\tflat\tmatched\n' >"$out/soak.tsv"
for backend in $backends; do
	me="soak[$backend]"
	tree=$work/$backend
	src=$tree/src
	mkdir -p "$src" "$tree/outside" || exit 2
	(cd "$tree" && "$churn" -s 1 -n 3000 -p 0 src outside) 2>/dev/null || exit 2
	name=m_$backend
	# The mirror's own start() fails the script when a backend cannot start:
	# probe with the library first, through the mirror's exit status 3.
	"$mirror" -q -b "$backend" "$src" "$work/probe-$backend" >/dev/null 2>&1 &
	probe=$!
	sleep 1
	if ! kill -0 $probe 2>/dev/null; then
		wait $probe
		echo "$me: the backend cannot run here: skipped"
		continue
	fi
	kill -TERM $probe
	wait $probe
	start "$name" -q -b "$backend" "$src" "$work/copy-$backend"
	sync_mirror "$name"
	samples=$out/soak-$backend.tsv
	printf 'second\trss_kib\tfds\n' >"$samples"
	sample "$(pid_of "$name")" "$samples" &
	sampler=$!
	end=$(($(date +%s) + secs))
	seed=2
	while test "$(date +%s)" -lt "$end"; do
		# Keep the tree between 1500 and 3000 entries, so that memory
		# figures are comparable over time: the mix of operations alone
		# drifts (whole subtrees deleted, chains of directories made).
		n=$(find "$src" | wc -l)
		ops=
		test "$n" -ge 1500 || ops="-O create,mkdir-p,symlink,rename-file,rename-dir"
		test "$n" -le 3000 || ops="-O delete-file,delete-tree,rename-file,rename-dir,move-out"
		(cd "$tree" && "$churn" $ops -s $seed -n 500 src outside) 2>/dev/null || exit 2
		seed=$((seed + 1))
	done
	sync_mirror "$name"
	matched=yes
	(compare "$name" "$src" "$work/copy-$backend" "after $secs s") >/dev/null || matched=no
	entries=$(listing "$src" | wc -l)
	events=$(grep '^synced' "$work/$name.out" | tail -n 1 | sed -n 's/.*events=\([0-9]*\).*/\1/p')
	kill -TERM "$(pid_of "$name")"
	wait "$(pid_of "$name")" 2>/dev/null
	wait $sampler 2>/dev/null
	last=$(tail -n 1 "$samples" | cut -f1)
	r0=$(median "$samples" 2 0 59); r1=$(median "$samples" 2 $((last - 59)) "$last")
	f0=$(median "$samples" 3 0 59); f1=$(median "$samples" 3 $((last - 59)) "$last")
	rmax=$(awk 'NR > 1 && $2 > m { m = $2 } END { print m + 0 }' "$samples")
	fmax=$(awk 'NR > 1 && $3 > m { m = $3 } END { print m + 0 }' "$samples")
	half=$((last / 2))
	rh=$(awk -v h=$half 'NR > 1 && $1 <= h && $2 > m { m = $2 } END { print m + 0 }' "$samples")
	fh=$(awk -v h=$half 'NR > 1 && $1 <= h && $3 > m { m = $3 } END { print m + 0 }' "$samples")
	flat=yes
	test "$r1" -le $((rh + rh / 10)) || test "$r1" -le $((rh + 256)) || flat=no
	test "$f1" -le "$fh" || flat=no
	test $flat = yes && test $matched = yes || status=1
	printf '%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$backend" "$secs" \
		"$r0" "$r1" "$rmax" "$f0" "$f1" "$fmax" "$events" "$overflows" "$entries" \
		"$flat" "$matched" >>"$out/soak.tsv"
	echo "$me: RSS $r0 -> $r1 KiB (max $rmax), descriptors $f0 -> $f1 (max $fmax)," \
		"$events events, $overflows OVERFLOW, $entries entries, flat=$flat, matched=$matched"
done
column -t "$out/soak.tsv" 2>/dev/null || cat "$out/soak.tsv"
exit $status
