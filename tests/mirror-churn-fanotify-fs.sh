#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The mirror test on the fanotify backend with filesystem marks (root), on a
# private tmpfs so that the mark hears this test only.  With CAP_SYS_ADMIN
# the kernel queue is unlimited: the burst of step 3 loses nothing.
: "${top_builddir:=$(pwd)}"
here=$(cd "$(dirname "$0")" && pwd)
[ "$(id -u)" = 0 ] || { echo "SKIP: filesystem marks need root"; exit 77; }
MIRROR_UNLIMITED_QUEUE=1 top_builddir=$top_builddir \
	exec "$here/fanotify-private-tmp.sh" "$here/mirror-churn.sh" fanotify
