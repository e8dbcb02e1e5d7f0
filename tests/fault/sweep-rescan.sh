#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The fault-injection sweep with NOTIFYX_WATCH_RESCAN on the watches
# (SWEEP_RESCAN=1): repairs under injected failures, on one kernel backend
# and one scanner, side by side (the runs mostly wait: one sweep after the
# other made this the longest test of make check).  Exit 77 = skip.
here=$(dirname "$0")
out=$(mktemp -d "${TMPDIR:-/tmp}/nxrescan.XXXXXX") || exit 1
trap 'rm -rf "$out"' EXIT
SWEEP_RESCAN=1 sh "$here/sweep.sh" inotify >"$out/inotify" 2>&1 &
pid=$!
SWEEP_RESCAN=1 sh "$here/sweep.sh" poll >"$out/poll" 2>&1
rc_poll=$?
wait "$pid"
rc_inotify=$?
cat "$out/inotify" "$out/poll"
# Both skipped: skip; else fail when either failed.
[ "$rc_inotify" = 77 ] && [ "$rc_poll" = 77 ] && exit 77
for rc in "$rc_inotify" "$rc_poll"; do
	[ "$rc" = 0 ] || [ "$rc" = 77 ] || exit 1
done
exit 0
