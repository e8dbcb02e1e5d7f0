#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# examples/libev-daemon as a user runs it, on one backend (argument 1, else
# $NOTIFYX_TEST_BACKEND, else inotify; given to the daemon as NOTIFYX_BACKEND):
# it logs a file made in a listed directory; after the list is rewritten and
# SIGHUP sent, it logs the newly listed directory and no longer the dropped
# one; SIGTERM (and SIGINT in a second run) end it cleanly with status 0.
# Exit: 0 pass, 1 fail, 77 skip (with the reason).

set -u

backend=${1:-${NOTIFYX_TEST_BACKEND:-inotify}}
top_builddir=${top_builddir:-.}
EX=$top_builddir/examples/libev-daemon
NX=$top_builddir/tools/notifyx

skip() { echo "SKIP: $*"; exit 77; }
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

[ -x "$EX" ] || skip "examples/libev-daemon is not built (no libev)"
"$NX" backends 2>/dev/null | grep -q "^$backend yes " || skip "the $backend backend does not start here"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/example-libev.XXXXXX") || exit 1
pid=
trap '[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM HUP

# count FILE PATTERN: matching lines; 0 also for a file the shell has not
# made yet (grep -c then prints nothing).
count() {
	c=$(grep -c "$2" "$1" 2>/dev/null)
	echo "${c:-0}"
}

# wait_count FILE PATTERN N: until N lines of FILE match (30 s at most: the
# machine may be busy).
wait_count() {
	k=0
	while [ "$(count "$1" "$2")" -lt "$3" ] && [ $k -lt 300 ]; do
		sleep 0.1
		k=$((k + 1))
	done
	[ "$(count "$1" "$2")" -ge "$3" ]
}

stop() { # SIG ERRFILE
	kill "-$1" "$pid"
	k=0
	while kill -0 "$pid" 2>/dev/null && [ $k -lt 150 ]; do
		sleep 0.1
		k=$((k + 1))
	done
	kill -0 "$pid" 2>/dev/null && { fail "SIG$1 did not end the daemon"; kill -KILL "$pid"; }
	wait "$pid"
	rc=$?
	pid=
	[ $rc -eq 0 ] || fail "SIG$1: status $rc, want 0"
	grep -q '^libev-daemon: stopped$' "$2" || fail "SIG$1: not stopped cleanly: $(cat "$2")"
}

mkdir "$tmp/a" "$tmp/b" "$tmp/a/sub"
printf '# paths to watch\n%s\n\n' "$tmp/a" >"$tmp/list"
NOTIFYX_BACKEND=$backend "$EX" "$tmp/list" >"$tmp/out" 2>"$tmp/err" &
pid=$!
wait_count "$tmp/err" '^libev-daemon: watching 1 paths$' 1 ||
	fail "the daemon never said it watched 1 path: $(cat "$tmp/err")"
echo x >"$tmp/a/sub/one"
wait_count "$tmp/out" "^create $tmp/a/sub/one\$" 1 || fail "no create of a/sub/one: $(cat "$tmp/out")"
if "$NX" backends | grep -q "^$backend yes .*close_write"; then
	wait_count "$tmp/out" "^close_write $tmp/a/sub/one\$" 1 ||
		fail "no close_write of a/sub/one: $(cat "$tmp/out")"
fi

# SIGHUP: b instead of a
printf '%s\n' "$tmp/b" >"$tmp/list"
kill -HUP "$pid"
wait_count "$tmp/err" '^libev-daemon: watching 1 paths$' 2 ||
	fail "SIGHUP: the list was not read again: $(cat "$tmp/err")"
wait_count "$tmp/out" "^ignored $tmp/a\$" 1 || fail "SIGHUP: the watch of a did not end: $(cat "$tmp/out")"
: >"$tmp/a/dropped"
: >"$tmp/b/two"
wait_count "$tmp/out" "^create $tmp/b/two\$" 1 || fail "SIGHUP: no create of b/two: $(cat "$tmp/out")"
grep -q dropped "$tmp/out" && fail "SIGHUP: a is still watched: $(cat "$tmp/out")"
stop TERM "$tmp/err"

# new files: the old ones may be read before the shell has truncated them
NOTIFYX_BACKEND=$backend "$EX" "$tmp/list" >"$tmp/out2" 2>"$tmp/err2" &
pid=$!
wait_count "$tmp/err2" '^libev-daemon: watching 1 paths$' 1 ||
	fail "second run did not start: $(cat "$tmp/err2")"
stop INT "$tmp/err2"

[ $failures -eq 0 ] || { echo "example-libev-daemon ($backend): $failures failure(s)"; exit 1; }
echo "example-libev-daemon ($backend): ok"
