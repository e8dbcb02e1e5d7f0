#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/fanotify-tree as user nobody (inode marks).  Exit 77 = skip.
dir=${top_builddir:-$(dirname "$0")/..}
prog="$dir/tests/fanotify-tree"
[ "$(id -u)" != 0 ] && exec "$prog"
if ! command -v setpriv >/dev/null 2>&1; then
	echo "SKIP: setpriv (util-linux) is needed to drop privileges"
	exit 77
fi
group=nogroup
getent group nogroup >/dev/null 2>&1 || group=nobody
exec setpriv --reuid=nobody --regid="$group" --clear-groups --inh-caps=-all "$prog"
