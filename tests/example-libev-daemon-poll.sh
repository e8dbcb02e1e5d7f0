#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/example-libev-daemon.sh on the poll backend (the test driver passes no arguments);
# it skips, saying why, while poll cannot start here.
exec "$(dirname "$0")/example-libev-daemon.sh" poll
