#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The fault-injection sweep with NOTIFYX_WATCH_RESCAN on the watches
# (SWEEP_RESCAN=1): repairs under injected failures, on one kernel backend
# and one scanner.  Exit 77 = skip.
here=$(dirname "$0")
SWEEP_RESCAN=1 sh "$here/sweep.sh" inotify || exit $?
SWEEP_RESCAN=1 exec sh "$here/sweep.sh" poll
