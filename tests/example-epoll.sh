#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# examples/epoll as a user runs it: two directories, one per handle; files
# made in each are reported by that directory's handle; SIGTERM, and then in
# a second run SIGINT, arriving through the signalfd end it with status 0.
# Exit: 0 pass, 1 fail, 77 skip (with the reason).

set -u

top_builddir=${top_builddir:-.}
EX=$top_builddir/examples/epoll

skip() { echo "SKIP: $*"; exit 77; }
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

[ -x "$EX" ] || { echo "FAIL: $EX is not built"; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/example-epoll.XXXXXX") || exit 1
pid=
trap '[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM HUP

# wait_grep FILE PATTERN: until grep -q PATTERN FILE (30 s at most: the
# scanning backends see changes at their next scan, the machine may be busy).
wait_grep() {
	k=0
	while ! grep -q "$2" "$1" 2>/dev/null && [ $k -lt 300 ]; do
		kill -0 "$pid" 2>/dev/null || return 1
		sleep 0.1
		k=$((k + 1))
	done
	grep -q "$2" "$1"
}

for sig in TERM INT; do
	mkdir -p "$tmp/one" "$tmp/two"
	rm -f "$tmp/out" "$tmp/err" # not read before the shell makes them anew
	"$EX" "$tmp/one" "$tmp/two" >"$tmp/out" 2>"$tmp/err" &
	pid=$!
	if ! wait_grep "$tmp/err" '^epoll: watching '; then
		kill -KILL "$pid" 2>/dev/null # still running: it is stuck, never wait for it
		wait "$pid"
		rc=$?
		pid=
		[ $rc -eq 77 ] && skip "$(cat "$tmp/err")"
		fail "epoll never said it was watching (status $rc): $(cat "$tmp/err")"
		break
	fi
	cat "$tmp/err"
	second=$(sed -n 's/^epoll: watching .* and .* (\([a-z]*\))$/\1/p' "$tmp/err")
	: >"$tmp/one/a-$sig"
	: >"$tmp/two/b-$sig"
	wait_grep "$tmp/out" "^inotify create $tmp/one/a-$sig\$" ||
		fail "SIG$sig run: no inotify create of one/a-$sig: $(cat "$tmp/out")"
	wait_grep "$tmp/out" "^$second create $tmp/two/b-$sig\$" ||
		fail "SIG$sig run: no $second create of two/b-$sig: $(cat "$tmp/out")"
	kill "-$sig" "$pid"
	k=0
	while kill -0 "$pid" 2>/dev/null && [ $k -lt 150 ]; do
		sleep 0.1
		k=$((k + 1))
	done
	kill -0 "$pid" 2>/dev/null && { fail "SIG$sig did not end epoll"; kill -KILL "$pid"; }
	wait "$pid"
	rc=$?
	pid=
	[ $rc -eq 0 ] || fail "SIG$sig: status $rc, want 0"
	grep -q "stopping" "$tmp/err" || fail "SIG$sig: no 'stopping' on stderr: $(cat "$tmp/err")"
done

[ $failures -eq 0 ] || { echo "example-epoll: $failures failure(s)"; exit 1; }
echo "example-epoll: ok"
