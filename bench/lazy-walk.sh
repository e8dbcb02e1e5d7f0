#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# lazy-walk.sh [-n SEEDS] [-c OPS] [-p USEC]: fanotify with a filesystem mark,
# a watch that walks its tree against one that does not (bench/lazy-walk),
# under tests/churn: for each seed 1..SEEDS (default 8), a tree made by churn
# -s 1000 -n 300, then churn -s SEED -n OPS (default 2000) at -p USEC
# (default 0: flat out), in a tmpfs of its own (root: a mount namespace).
# Prints per seed the events (name, ISDIR, last path component) that one
# watch reported and the other did not, each way.  Run from the build tree.
set -u
seeds=8 ops=2000 pace=0
while getopts n:c:p: opt; do
	case $opt in
	n) seeds=$OPTARG ;;
	c) ops=$OPTARG ;;
	p) pace=$OPTARG ;;
	*) echo "usage: $0 [-n SEEDS] [-c OPS] [-p USEC]" >&2; exit 2 ;;
	esac
done
[ "$(id -u)" = 0 ] || { echo "lazy-walk.sh: filesystem marks need root" >&2; exit 77; }
[ -x bench/lazy-walk ] && [ -x tests/churn ] || { echo "lazy-walk.sh: run from the build tree" >&2; exit 2; }
build=$(pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/lazy-walk.XXXXXX") || exit 1
unshare --mount --propagation private sh -c '
	mount -t tmpfs lazy-walk "$1" || exit 1
	cd "$1" || exit 1
	s=1
	while [ "$s" -le "$3" ]; do
		rm -rf src outside && mkdir src outside
		"$2/tests/churn" -s 1000 -n 300 -p 0 src outside >/dev/null 2>&1
		"$2/bench/lazy-walk" src walked lazy 2>/dev/null &
		w=$!
		sleep 1
		"$2/tests/churn" -s "$s" -n "$4" -p "$5" src outside >/dev/null 2>&1
		sleep 1
		kill -TERM "$w"
		wait "$w"
		# Events as (name, ISDIR, last component): the same event placed
		# at two paths counts once.
		for f in walked lazy; do
			awk "{ n = split(\$3, p, \"/\"); print \$1, \$2, p[n] }" "$f" | sort > "$f.k"
		done
		echo "seed $s: events $(wc -l < walked) walked, $(wc -l < lazy) lazy;" \
			"only walked $(comm -23 walked.k lazy.k | wc -l)," \
			"only lazy $(comm -13 walked.k lazy.k | wc -l)"
		s=$((s + 1))
	done' sh "$work" "$build" "$seeds" "$ops" "$pace"
status=$?
rmdir "$work"
exit $status
