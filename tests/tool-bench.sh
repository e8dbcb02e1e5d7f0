#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# `notifyx bench` run as a user runs it, in tiny sizes: a table with the raw
# reference and one line per backend (figures where it starts, a reason
# where it does not), the scratch directory removed, and the usage errors.
# Exit: 0 pass, 1 fail.  Timings are not checked: they are the tool's output.
set -u
. "$(dirname "$0")/tool-lib.sh"

mkdir -p "$tmp/tree/a/b" "$tmp/tree/c"
"$NX" bench -n 50 -l 10 -r 1 "$tmp/tree" >"$tmp/out" 2>"$tmp/err" || fail "exit $? ($(cat "$tmp/err"))"
cat "$tmp/out"
grep -q '^backend  *events/s' "$tmp/out" || fail "no table header"
# raw and inotify always start on Linux: every column is a number
for b in raw inotify; do
	grep -Eq "^$b +[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+\$" \
		"$tmp/out" || fail "no figures for $b"
done
for b in fanotify dnotify poll; do
	grep -q "^$b " "$tmp/out" || fail "no line for $b"
done
[ -z "$(find "$tmp/tree" -maxdepth 1 -name '*notifyx-bench*')" ] || fail "scratch directory left in DIR"

"$NX" bench -r 0 "$tmp/tree" >/dev/null 2>&1; [ $? = 2 ] || fail "-r 0 is not a usage error"
"$NX" bench "$tmp/tree" "$tmp" >/dev/null 2>&1; [ $? = 2 ] || fail "two DIRs are not a usage error"
: >"$tmp/file"
"$NX" bench "$tmp/file" 2>"$tmp/err"; [ $? = 1 ] || fail "a file as DIR does not fail"
grep -q 'Not a directory' "$tmp/err" || fail "a file as DIR: $(cat "$tmp/err")"
"$NX" bench --help | grep -q '^Usage: notifyx bench' || fail "--help"

finish
