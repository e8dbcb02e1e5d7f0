#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# NOTIFYX_BACKEND_AUTO's order (tests/auto-order.c): as the machine is, then
# under the fault shim with inotify_init1, then also fanotify_init, then also
# poll's timerfd_create failing.  Exit 77 when the shim cannot be preloaded
# (then only the first run counts).
dir=${top_builddir:-$(dirname "$0")/..}
prog=$dir/tests/auto-order
shim=$dir/tests/fault/.libs/libfaultshim.so

"$prog" || exit 1
if [ ! -f "$shim" ]; then
	echo "SKIP: $shim is not built: the failing backends are not tested"
	exit 77
fi
# ASan must come first in the process: a preloaded shim cannot.
if ldd "$dir"/libnotifyx/.libs/libnotifyx.so 2>/dev/null | grep -q libasan; then
	echo "SKIP: the library is built with ASan, which refuses a preloaded shim"
	exit 77
fi
run() { # EXPECTED KINDS ERRNOS
	echo "--- $2 fail ($3)"
	LD_PRELOAD=$shim FAULT_KINDS=$2 FAULT_ERRNO=$3 FAULT_N=1 FAULT_COUNT=1000000000 \
		"$prog" "$1" || exit 1
}
run fanotify,poll inotify_init1 inotify_init1=EMFILE
run poll inotify_init1,fanotify_init inotify_init1=EMFILE,fanotify_init=EPERM
run none inotify_init1,fanotify_init,timerfd_create \
	inotify_init1=EMFILE,fanotify_init=EPERM,timerfd_create=ENFILE
exit 0
