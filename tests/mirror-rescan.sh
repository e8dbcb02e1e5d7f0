#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# mirror-rescan.sh [BACKEND]: examples/mirror with NOTIFYX_WATCH_RESCAN (-R)
# and a tiny queue (-Q 8) under the seeded churn of tests/churn, run flat
# out while the mirror reads: events are lost over and over, the library
# repairs the watch each time (API.md, "Mirroring a tree": OVERFLOW with
# RESCAN: nothing to do; the copy is exact again at the next SYNC).
#
# After each of 20 seeds, once the mirror is quiescent: the copy equals the
# tree, this seed caused at least one OVERFLOW, there was one SYNC per
# OVERFLOW plus the listing's, no anomaly (an event that could not be
# applied), no ERROR, and the mirror never re-added its watch (resyncs 0).
#
# BACKEND: $1, else $NOTIFYX_BACKEND, else inotify.  MIRROR_RESCAN_OPS: the
# operations per seed (default 1000).  Exit 0 pass, 1 fail, 77 skip.
# MIRROR_KEEP=1 keeps the work directory (logs, listings, operations).

backend=${1:-${NOTIFYX_BACKEND:-inotify}}
: "${top_builddir:=$(pwd)}"
mirror=$top_builddir/examples/mirror
churn=$top_builddir/tests/churn
ops=${MIRROR_RESCAN_OPS:-1000}
seeds=${MIRROR_RESCAN_SEEDS:-20}
me="mirror-rescan[$backend]"

for p in "$mirror" "$churn"; do
	if ! test -x "$p"; then
		echo "SKIP: $me: $p is not built"
		exit 77
	fi
done
for tool in find sort diff; do
	if ! command -v $tool >/dev/null 2>&1; then
		echo "SKIP: $me: $tool is not installed"
		exit 77
	fi
done

. "$(dirname "$0")/mirror-lib.sh"

tree=$work/tree
src=$tree/src
outside=$tree/outside
mkdir -p "$src/a/b" "$outside" || exit 1
(cd "$tree" && "$churn" -s 1000 -n 300 -p 0 src outside) 2>/dev/null || fail "churn failed"

# The scanning backends: a short interval, so that a sync is quick.
start m -q -R -Q 8 -i 100 -b "$backend" "$src" "$work/copy"
sync_mirror m
compare m "$src" "$work/copy" "initial listing"
t0=$(date +%s)
seen=$overflows
seed=1
while test $seed -le "$seeds"; do
	x=
	# Exchanges with a directory (churn -x) in three seeds of four.
	test $((seed % 4)) != 0 && x=-x
	(cd "$tree" && "$churn" -v $x -p 0 -s $seed -n "$ops" src outside >"$work/churn-$seed.ops") ||
		fail "churn failed"
	sync_mirror m
	resyncs=$(echo "$line" | sed -n 's/.* resyncs=\([0-9]*\).*/\1/p')
	syncs=$(echo "$line" | sed -n 's/.* syncs=\([0-9]*\).*/\1/p')
	compare m "$src" "$work/copy" "seed $seed${x:+ with exchanges}, $((overflows - seen)) OVERFLOW(s)"
	check_clean m "seed $seed"
	test "$overflows" -gt "$seen" || {
		MIRROR_KEEP=1
		fail "seed $seed: no OVERFLOW with queue_max 8 ($ops operations flat out)"
	}
	test "${resyncs:-x}" = 0 || fail "seed $seed: the mirror re-added its watch ($resyncs times)"
	test "$syncs" = $((overflows + 1)) || {
		MIRROR_KEEP=1
		fail "seed $seed: $syncs SYNC for $overflows OVERFLOW (expected one per repair plus the listing's)"
	}
	seen=$overflows
	seed=$((seed + 1))
done
kill -TERM "$(pid_of m)"
wait "$(pid_of m)"
grep -q 'stale 0 ' "$work/m.log" || fail "events of a replaced watch: $(grep '^mirror: exchanges' "$work/m.log")"
echo "$me: $seeds seeds of $ops operations in $(($(date +%s) - t0)) s, $overflows OVERFLOW(s); $(grep '^mirror: [0-9]* events' "$work/m.log")"
echo "PASS: $me"
exit 0
