#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The fault-injection sweep on the inotify backend (the test driver passes no
# arguments, so each backend has a wrapper like this one).  Exit 77 = skip.
dir=${top_builddir:-$(dirname "$0")/../..}
exec sh "$dir/tests/fault/sweep.sh" inotify
