#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/tool-options.sh on the fanotify backend (the test driver passes no arguments);
# it skips, saying why, while fanotify cannot start here.
exec "$(dirname "$0")/tool-options.sh" fanotify
