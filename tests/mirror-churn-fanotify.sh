#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The mirror test on the fanotify backend with inode marks: as root it runs
# as user nobody (setpriv).  With filesystem marks (root) the mirror does not
# yet keep up with the churn: run tests/fanotify-private-tmp.sh
# tests/mirror-churn.sh fanotify by hand to see it (see the BUGS of notifyx(7)).
here=$(dirname "$0")
[ "$(id -u)" != 0 ] && exec "$here/mirror-churn.sh" fanotify
if ! command -v setpriv >/dev/null 2>&1; then
	echo "SKIP: setpriv (util-linux) is needed to drop privileges"
	exit 77
fi
group=nogroup
getent group nogroup >/dev/null 2>&1 || group=nobody
exec setpriv --reuid=nobody --regid="$group" --clear-groups --inh-caps=-all \
	env top_builddir="${top_builddir:-$(pwd)}" "$here/mirror-churn.sh" fanotify
