#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# examples/libuv-watch as a user runs it: a blocking handle in a libuv loop
# (uv_poll_init makes its descriptor non-blocking).  Files made in a watched
# tree are logged; SIGTERM, and SIGINT in a second run, end it with status 0.
# (A read that waits instead of failing with EAGAIN is not seen here: the
# next event or signal ends the wait.  tests/loop-nonblock-uv catches it.)
# Exit: 0 pass, 1 fail, 77 skip (with the reason).

set -u

top_builddir=${top_builddir:-.}
EX=$top_builddir/examples/libuv-watch

skip() { echo "SKIP: $*"; exit 77; }
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

[ -x "$EX" ] || skip "examples/libuv-watch is not built (no libuv)"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/example-libuv.XXXXXX") || exit 1
pid=
trap '[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM HUP

# wait_grep FILE PATTERN: until grep -q PATTERN FILE (30 s at most: the
# poll backend sees changes at its next scan, the machine may be busy).
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
	mkdir -p "$tmp/d/sub"
	rm -f "$tmp/out" "$tmp/err"
	"$EX" "$tmp/d" >"$tmp/out" 2>"$tmp/err" &
	pid=$!
	if ! wait_grep "$tmp/err" '^libuv-watch: watching 1 paths$'; then
		kill -KILL "$pid" 2>/dev/null
		wait "$pid"
		rc=$?
		pid=
		[ $rc -eq 77 ] && skip "$(cat "$tmp/err")"
		fail "libuv-watch never said it was watching (status $rc): $(cat "$tmp/err")"
		break
	fi
	: >"$tmp/d/one-$sig"
	wait_grep "$tmp/out" "^create $tmp/d/one-$sig\$" || fail "SIG$sig: no create of one-$sig: $(cat "$tmp/out")"
	: >"$tmp/d/sub/two-$sig"
	wait_grep "$tmp/out" "^create $tmp/d/sub/two-$sig\$" ||
		fail "SIG$sig: no create of sub/two-$sig: $(cat "$tmp/out")"
	kill "-$sig" "$pid"
	k=0
	while kill -0 "$pid" 2>/dev/null && [ $k -lt 150 ]; do
		sleep 0.1
		k=$((k + 1))
	done
	kill -0 "$pid" 2>/dev/null && { fail "SIG$sig did not end libuv-watch"; kill -KILL "$pid"; }
	wait "$pid"
	rc=$?
	pid=
	[ $rc -eq 0 ] || fail "SIG$sig: status $rc, want 0"
	grep -q '^libuv-watch: stopped$' "$tmp/err" || fail "SIG$sig: not stopped cleanly: $(cat "$tmp/err")"
done

[ $failures -eq 0 ] || { echo "example-libuv: $failures failure(s)"; exit 1; }
echo "example-libuv: ok"
