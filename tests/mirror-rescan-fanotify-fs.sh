#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The RESCAN mirror test on the fanotify backend with filesystem marks
# (root), on a private tmpfs so that the mark hears this test only.
: "${top_builddir:=$(pwd)}"
here=$(cd "$(dirname "$0")" && pwd)
[ "$(id -u)" = 0 ] || { echo "SKIP: filesystem marks need root"; exit 77; }
top_builddir=$top_builddir exec "$here/fanotify-private-tmp.sh" "$here/mirror-rescan.sh" fanotify
