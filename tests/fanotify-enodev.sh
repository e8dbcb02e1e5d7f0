#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# fanotify's ENODEV (see tests/fanotify-enodev.c): the program on a real
# filesystem fanotify cannot mark (an overlay with a zero fsid), then again
# under the fault shim, which takes the file handles away (name_to_handle_at
# fails with EOPNOTSUPP); and `notifyx backends` says ENODEV.  As user nobody
# this runs through tests/fanotify-enodev-user.sh.  Exit 77 when no part ran.
dir=${top_builddir:-$(dirname "$0")/..}
prog=$dir/tests/fanotify-enodev
shim=$dir/tests/fault/.libs/libfaultshim.so

line=$("$dir/tools/notifyx" backends | grep '^fanotify ')
case $line in
"fanotify yes"*ENODEV*) ;;
"fanotify yes"*) echo "FAIL: notifyx backends does not explain ENODEV: $line"; exit 1 ;;
*) echo "SKIP: $line"; exit 77 ;;
esac
"$prog"
real=$?
if [ ! -f "$shim" ]; then
	echo "SKIP (no file handles): $shim is not built"
	exit "$real"
fi
# ASan must come first in the process: a preloaded shim cannot.
if ldd "$dir"/libnotifyx/.libs/libnotifyx.so 2>/dev/null | grep -q libasan; then
	echo "SKIP (no file handles): the library is built with ASan, which refuses a preloaded shim"
	exit "$real"
fi
# Every name_to_handle_at() of the library fails while the program enables
# the shim (only around the watch that must fail).
LD_PRELOAD=$shim FAULT_KINDS=name_to_handle_at FAULT_N=1 FAULT_COUNT=1000000000 "$prog"
shim_rc=$?
for rc in "$real" "$shim_rc"; do
	[ "$rc" = 0 ] || [ "$rc" = 77 ] || exit "$rc"
done
[ "$real" = 77 ] && [ "$shim_rc" = 77 ] && exit 77
exit 0
