#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# mirror-cases.sh [BACKEND]: small, deterministic cases for examples/mirror
# (the "Mirroring a tree" pattern of notifyx(7)), each reduced from a
# divergence that tests/mirror-churn.sh found.  For each case: a tree with
# the setup, the mirror started and synced, then the operations, run while
# the mirror is stopped (SIGSTOP: the library reads them all in one go,
# after they all happened) or while it runs; then sync and compare (the same
# relative paths, each a directory in both or in neither).
#
# BACKEND: $1, else $NOTIFYX_BACKEND, else inotify.  Exit 0 pass, 1 fail, 77 skip.

backend=${1:-${NOTIFYX_BACKEND:-inotify}}
: "${top_builddir:=$(pwd)}"
mirror=$top_builddir/examples/mirror
exchange=$top_builddir/tests/mirror-exchange
me="mirror-cases[$backend]"

for p in "$mirror" "$exchange"; do
	if ! test -x "$p"; then
		echo "SKIP: $me: $p is not built"
		exit 77
	fi
done

work=$(mktemp -d "${TMPDIR:-/tmp}/notifyx-cases.XXXXXX") || exit 1
pid=
cleanup() {
	if test -n "$pid"; then
		kill -CONT "$pid" 2>/dev/null
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	fi
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

listing() {
	(cd "$1" && find . -mindepth 1 \( -type d -printf 'd %P\n' \) -o -printf 'f %P\n') |
		LC_ALL=C sort
}

# wait_line PATTERN COUNT: until $work/out has COUNT lines matching PATTERN
wait_line() {
	i=0
	while test "$(grep -c "$1" "$work/out")" -lt "$2"; do
		kill -0 "$pid" 2>/dev/null || return 1
		i=$((i + 1))
		test $i -lt 400 || return 1
		sleep 0.05
	done
}

failed=0
n=0
# case NAME stop|run SETUP OPS: SETUP and OPS run in $work/tree, beside
# $work/outside (not watched).
case_() {
	name=$1 mode=$2 setup=$3 ops=$4
	n=$((n + 1))
	rm -rf "$work/tree" "$work/outside" "$work/copy"
	mkdir "$work/tree" "$work/outside"
	(cd "$work/tree" && eval "$setup") || { echo "$me: $name: setup failed"; exit 1; }
	# Emptied here, not by the redirection in the child: the previous
	# case's "started" must not be seen before the new mirror runs.
	: >"$work/out"
	"$mirror" -b "$backend" "$work/tree" "$work/copy" >"$work/out" 2>"$work/log" &
	pid=$!
	if ! wait_line '^started' 1; then
		wait "$pid"
		status=$?
		pid=
		if test $status -eq 3; then
			echo "SKIP: $me: the $backend backend cannot run here"
			exit 77
		fi
		cat "$work/log"
		echo "FAIL: $me: the mirror did not start"
		exit 1
	fi
	kill -USR1 "$pid"
	wait_line '^synced' 1 || { echo "FAIL: $me: $name: no sync"; exit 1; }
	lines=$(wc -l <"$work/log")
	test "$mode" = stop && kill -STOP "$pid"
	(cd "$work/tree" && eval "$ops") || { echo "$me: $name: operations failed"; exit 1; }
	test "$mode" = stop && kill -CONT "$pid"
	kill -USR1 "$pid"
	wait_line '^synced' 2 || { echo "FAIL: $me: $name: no sync"; exit 1; }
	listing "$work/tree" >"$work/tree.list"
	listing "$work/copy" >"$work/copy.list"
	if diff -u "$work/tree.list" "$work/copy.list" >"$work/diff" &&
	   ! grep -q 'anomaly' "$work/log"; then
		echo "ok $n - $name"
	else
		failed=$((failed + 1))
		echo "not ok $n - $name"
		echo "#   setup: $setup"
		echo "#   operations ($mode): $ops"
		tail -n +$((lines + 1)) "$work/log" | sed 's/^/#   event: /'
		sed -n '3,$p' "$work/diff" | grep '^[-+]' | sed 's/^/#   (- tree, + copy) /'
		grep 'anomaly' "$work/log" | sed 's/^/#   /'
	fi
	kill -TERM "$pid"
	wait "$pid"
	pid=
}

X=$exchange

# Controls, which pass.
case_ "new directory, then renamed itself" stop \
	'mkdir a' 'mkdir a/d a/d/e; touch a/d/f; mv a/d g'
case_ "exchange of two directories" run \
	'mkdir -p a/x b/y' "$X a b; touch a/y/n b/x/m"
case_ "exchange with a directory outside, the tree's entry first" run \
	'touch f; mkdir -p ../outside/d/e' "$X f ../outside/d"

# A new directory is watched and listed by the path its CREATE names, when
# the library reads that CREATE.  If its parent was renamed meanwhile, the
# path leads nowhere: the directory is never watched, what it holds is never
# reported (only "create a/d" and "rename b <- a" are).
case_ "new directory whose parent is renamed before the library reads its CREATE" stop \
	'mkdir a' 'mkdir a/d a/d/e; touch a/d/e/f; mv a b'

# ... and if another directory took the old path, the library watches that
# one in its place: "a/d/y" is reported twice (once as a CREATE below the
# first a/d, where it never was), "b/d/x" never.
case_ "new directory whose parent is renamed and its path made again" stop \
	'mkdir a' 'mkdir a/d; mv a b; mkdir -p a/d; touch b/d/x a/d/y'

# A directory listed when the library reads its CREATE is listed as it is
# then, after the operations that follow: here z holds y/s already.  The
# exchange read afterwards is done in the listing; done again, z would be
# swapped with z/y/s, a directory below it.  (fanotify reports both
# directories of a move when both are marked: y is, as the mark it had
# before it left is still there.)
case_ "exchange read after the listing of a directory that shows its result" stop \
	'mkdir -p y/s' "mv y ../outside/y; mkdir z; mv ../outside/y y; $X z y/s; mv y z/y"

# ... and where the listing found a file in place of a directory (k, after
# the exchange) and the exchange that made it so is read afterwards: the
# copy has files at both ends.  Swapped, q/f would stay a file there.
case_ "exchange read after the listing of a directory that found its file" stop \
	'mkdir -p p/k/x q; touch q/f' "mkdir n; mv p n/p; $X n/p/k q/f"

# An exchange with a place the handle does not watch, renameat2's first
# argument being that place: the kernel queues MOVED_TO f (the directory
# arriving) before MOVED_FROM f (the file leaving), and the library reports
# them in that order: "moved_in dir f", "moved_out f".  Applied in that
# order, f is gone from the copy while the tree has the directory f.  The
# directory's own watch tells it was exchanged, not replaced (notifyx(7)).
case_ "exchange with a directory outside, the outside entry first" run \
	'touch f; mkdir -p ../outside/d/e' "$X ../outside/d f"

# A directory that moves in is listed when the library reads its MOVED_IN,
# as it is then: with filesystem marks, found by its identifier (its path
# may have changed), and what left it meanwhile is listed where it went.
case_ "directory moved in, then one below it moved away before the move is read" stop \
	'mkdir -p ../outside/m/s/t; touch ../outside/m/s/t/f' \
	'mv ../outside/m m; touch m/s/t/g; mv m/s s2; mv m n'

# A directory that comes back in (by an exchange with a file) is listed as
# it is when the library reads its arrival: after a file moved out of k
# onto l and k was exchanged with l.  The rename's record, read then, names
# k (still marked, with inode marks, from before it left) where the listing
# put the directory at l: the rename would go from l/f to l, below itself.
# The listing shows it done.
case_ "move out of a directory that a listing ahead of it put at the move's target" stop \
	'mkdir -p p/k; touch p/k/f q' \
	"mv p ../outside/p; $X ../outside/p q; ln -s x q/l; mv q/k/f q/l; $X q/k q/l"

# An event in a directory whose parent is renamed before the event is read:
# the event's path is the one at the time (then the rename moves it).
case_ "event in a directory whose parent is renamed before the event is read" stop \
	'mkdir -p a/b/c' 'touch a/b/c/f; mv a/b x; mkdir a/b; touch a/b/g'

if test $failed -ne 0; then
	echo "FAIL: $me: $failed of $n cases"
	exit 1
fi
echo "PASS: $me: $n cases"
exit 0
