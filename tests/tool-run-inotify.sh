#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/tool-run.sh on the inotify backend (the test driver passes no arguments).
exec "$(dirname "$0")/tool-run.sh" inotify
