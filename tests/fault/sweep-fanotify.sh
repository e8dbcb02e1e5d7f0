#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The fault-injection sweep on the fanotify backend (the test driver passes no
# arguments, so each backend has a wrapper like this one).  Exit 77 = skip.
exec sh "$(dirname "$0")/sweep.sh" fanotify
