#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# fanotify with filesystem marks (root) under churn: examples/mirror follows
# a tree that tests/churn renames, moves and deletes, on a private tmpfs.
# The copy is not compared (with filesystem marks the mirror does not yet
# keep up: see BUGS in notifyx(7)); what is checked is that the library
# survives it and stays usable: the mirror neither crashes nor stops
# answering, and in the sanitizer build any memory error fails the test.
# (A use after free in rename handling was found this way.)
: "${top_builddir:=$(pwd)}"
here=$(cd "$(dirname "$0")" && pwd)
if [ -z "${NX_FANPRIV:-}" ]; then
	[ "$(id -u)" = 0 ] || { echo "SKIP: filesystem marks need root"; exit 77; }
	NX_FANPRIV=1 top_builddir=$top_builddir exec "$here/fanotify-private-tmp.sh" "$here/fanotify-fs-churn.sh"
fi
mirror=$top_builddir/examples/mirror
churn=$top_builddir/tests/churn
backend=fanotify
me="fanotify-fs-churn"
. "$here/mirror-lib.sh"

src=$work/tree/src
mkdir -p "$src" "$work/tree/outside" || exit 1
(cd "$work/tree" && "$churn" -s 100 -n 500 -p 0 src outside) 2>/dev/null || fail "churn failed"
start m -q -b fanotify "$src" "$work/copy"
sync_mirror m
for seed in 1 2 3 4 5 6; do
	x=
	test $seed -ge 5 && x=-x
	(cd "$work/tree" && "$churn" $x -s $seed -n 1500 src outside) 2>/dev/null || fail "churn failed"
	sync_mirror m
	echo "$me: seed $seed${x:+ with exchanges}: the mirror is alive and synced" \
		"($anomalies anomalies so far)"
done
kill -TERM "$(pid_of m)"
wait "$(pid_of m)" || fail "the mirror exited with status $? after SIGTERM"
echo "PASS: $me"
