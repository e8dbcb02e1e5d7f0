#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The RESCAN mirror test on the poll backend (the serial test driver passes no
# arguments, so each backend has a wrapper like this one).
exec "$(dirname "$0")/mirror-rescan.sh" poll
