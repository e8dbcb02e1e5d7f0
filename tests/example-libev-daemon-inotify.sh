#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/example-libev-daemon.sh on the inotify backend (the test driver passes no arguments).
exec "$(dirname "$0")/example-libev-daemon.sh" inotify
