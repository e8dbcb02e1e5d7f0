#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# mirror-churn.sh [BACKEND]: run examples/mirror (the "Mirroring a tree"
# pattern of notifyx(7)) against trees changed by tests/churn, and check that
# the copy equals the tree whenever the mirror says it is quiescent: the same
# relative paths, each a directory in both or a non-directory in both.
#
# BACKEND: $1, else $NOTIFYX_BACKEND, else inotify.
#
#   1. a tree with some content; the mirror starts and lists it
#   2. churn at ordinary rates, several seeds (one with exchanges involving a
#      directory); after each, the copy must equal the tree, with no
#      OVERFLOW, no anomaly (an event that could not be applied) and no ERROR
#   3. a burst while the mirror is stopped (SIGSTOP), beyond the kernel's
#      16384 queued events: there must be an OVERFLOW (unless the kernel
#      queue is unlimited: MIRROR_UNLIMITED_QUEUE=1), and after the
#      mirror's resync the copy must equal the tree
#   4. a second mirror with queue_max 64 (-Q 64) on a small tree, stopped
#      during a burst of a few hundred events: an OVERFLOW from the
#      library's own limit, then equal after the resync
#   5. a tree about 2400 characters deep, in which churn -D grows chains of
#      long names (up to 3000 characters below the root: absolute paths
#      longer than PATH_MAX, relative ones that fit) and churn -U exchanges
#      entries with NAME.tmp beside them, which the mirror excludes
#      (-e '*.tmp'), and with entries of a directory outside the tree: the
#      copy must equal the tree less the *.tmp entries, with no OVERFLOW,
#      anomaly or ERROR
#
# The mirror is told to get quiescent by SIGUSR1 and answers with a line
# "synced ..." (see examples/mirror.c).  Exit 0 pass, 1 fail, 77 skip.
# Set MIRROR_KEEP=1 to keep the work directory (logs, listings, operations).

backend=${1:-${NOTIFYX_BACKEND:-inotify}}
# The serial test driver runs tests from the top build directory and exports
# srcdir only; AM_TESTS_ENVIRONMENT may also give these.
: "${top_builddir:=$(pwd)}"
mirror=$top_builddir/examples/mirror
churn=$top_builddir/tests/churn
ops=${MIRROR_CHURN_OPS:-2000}
me="mirror-churn[$backend]"
scanning=0
case $backend in dnotify | poll) scanning=1 ;; esac

for p in "$mirror" "$churn"; do
	if ! test -x "$p"; then
		echo "SKIP: $me: $p is not built"
		exit 77
	fi
done
for tool in find sort diff seq xargs; do
	if ! command -v $tool >/dev/null 2>&1; then
		echo "SKIP: $me: $tool is not installed"
		exit 77
	fi
done

. "$(dirname "$0")/mirror-lib.sh"

# ---- 1. initial content -------------------------------------------------------------

tree=$work/tree
src=$tree/src
outside=$tree/outside
mkdir -p "$src/a/b/c" "$src/empty" "$outside" || exit 1
touch "$src/top" "$src/a/f" "$src/a/b/c/deep" "$src/name with spaces" || exit 1
ln -s a "$src/link-to-dir" && ln -s nowhere "$src/dangling" || exit 1
(cd "$tree" && "$churn" -s 1000 -n 300 -p 0 src outside) 2>/dev/null || fail "churn failed"

start m -b "$backend" "$src" "$work/copy"
sync_mirror m
compare m "$src" "$work/copy" "initial listing"

# ---- 2. churn at ordinary rates --------------------------------------------------------

for seed in 1 2 3 4; do
	x=
	test $seed = 4 && x=-x
	(cd "$tree" && "$churn" -v $x -s $seed -n "$ops" src outside >"$work/churn-$seed.ops") ||
		fail "churn failed"
	sync_mirror m
	compare m "$src" "$work/copy" "churn seed $seed${x:+ with exchanges}"
	test "$overflows" = 0 || {
		MIRROR_KEEP=1
		fail "churn seed $seed: $overflows OVERFLOW at ordinary rates"
	}
	check_clean m "churn seed $seed"
done

# ---- 3. a burst beyond the kernel's queue, the mirror stopped ---------------------------------

# The burst happens in a directory the library already watches (in one it
# has not seen yet, the kernel would report nothing but the directory).
mkdir "$src/burst" || exit 1
sync_mirror m
kill -STOP "$(pid_of m)"
(cd "$src/burst" && seq 1 12000 | xargs touch && seq 1 2 12000 | xargs rm) ||
	fail "burst failed"
(cd "$tree" && "$churn" -s 5 -n 1000 -p 0 src outside) 2>/dev/null || fail "churn failed"
kill -CONT "$(pid_of m)"
sync_mirror m
# A scanning backend sees only the state after the burst: nothing is lost.
# An unlimited kernel queue (MIRROR_UNLIMITED_QUEUE=1: fanotify with
# CAP_SYS_ADMIN) loses nothing either.
test "$overflows" -gt 0 || test "$scanning" = 1 || test "${MIRROR_UNLIMITED_QUEUE:-0}" = 1 ||
	fail "no OVERFLOW after about 30000 events while stopped"
compare m "$src" "$work/copy" "after $overflows OVERFLOW(s) and resync"
check_clean m "burst"
find "$src" -name '[0-9]*' -exec rm -rf {} +
(cd "$tree" && "$churn" -s 6 -n 500 src outside) 2>/dev/null || fail "churn failed"
sync_mirror m
compare m "$src" "$work/copy" "churn after the resync"
kill -TERM "$(pid_of m)"
wait "$(pid_of m)"
echo "$me: $(grep '^mirror: [0-9]* events' "$work/m.log")"

# ---- 4. the library's own limit: queue_max 64 -------------------------------------------------

src2=$work/small
mkdir -p "$src2/d/e" && touch "$src2/f1" "$src2/d/f2" "$src2/d/e/f3" || exit 1
mkdir "$src2/burst" || exit 1
start q -Q 64 -b "$backend" "$src2" "$work/copy2"
sync_mirror q
compare q "$src2" "$work/copy2" "queue_max 64: initial listing"
kill -STOP "$(pid_of q)"
(cd "$src2/burst" && seq 1 300 | xargs touch && seq 1 300 | xargs rm) ||
	fail "burst failed"
mkdir "$src2/d/after" && touch "$src2/d/after/g" "$src2/burst/last" || fail "burst failed"
kill -CONT "$(pid_of q)"
sync_mirror q
test "$overflows" -gt 0 || test "$scanning" = 1 ||
	fail "queue_max 64: no OVERFLOW after 600 events while stopped"
compare q "$src2" "$work/copy2" "queue_max 64: after $overflows OVERFLOW(s) and resync"
check_clean q "queue_max 64"
kill -TERM "$(pid_of q)"
wait "$(pid_of q)"
echo "$me: $(grep '^mirror: [0-9]* events' "$work/q.log")"

# ---- 5. deep chains, exchanges with what the watch does not see ------------------------

deep=$(deep_dir)
src3=$deep/src
mkdir -p "$src3" "$deep/outside" || exit 1
(cd "$deep" && "$churn" -D -s 2000 -n 300 -p 0 src outside) 2>/dev/null || fail "churn failed"
start e -e '*.tmp' -b "$backend" "$src3" "$work/copy3"
sync_mirror e
compare e "$src3" "$work/copy3" "deep tree: initial listing" '*.tmp'
for seed in 7 8; do
	(cd "$deep" && "$churn" -v -x -D -U -s $seed -n "$ops" src outside >"$work/churn-deep-$seed.ops") ||
		fail "churn failed"
	sync_mirror e
	compare e "$src3" "$work/copy3" "deep chains and exchanges with unseen places, seed $seed" '*.tmp'
	test "$overflows" = 0 || {
		MIRROR_KEEP=1
		fail "deep tree, seed $seed: $overflows OVERFLOW at ordinary rates"
	}
	check_clean e "deep tree, seed $seed"
done
kill -TERM "$(pid_of e)"
wait "$(pid_of e)"
echo "$me: $(grep '^mirror: [0-9]* events' "$work/e.log")"

echo "PASS: $me"
exit 0
