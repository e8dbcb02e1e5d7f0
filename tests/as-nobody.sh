#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# as-nobody.sh COMMAND [ARG]...: runs COMMAND as user nobody (no groups, no
# capabilities) when started as root, as it is otherwise; top_builddir is
# passed on.  The fanotify tests use it to get inode marks instead of
# filesystem marks.  Exit 77 (skip) when privileges cannot be dropped here or
# nobody cannot run COMMAND.
[ "$(id -u)" != 0 ] && exec "$@"
if ! command -v setpriv >/dev/null 2>&1; then
	echo "SKIP: setpriv (util-linux) is needed to drop privileges"
	exit 77
fi
group=nogroup
getent group nogroup >/dev/null 2>&1 || group=nobody
drop() {
	setpriv --reuid=nobody --regid="$group" --clear-groups --inh-caps=-all \
		env top_builddir="${top_builddir:-$(pwd)}" "$@"
}
# The user must be able to reach the program and the library it runs.
if ! drop test -x "$1"; then
	echo "SKIP: user nobody cannot run $1 (a directory on the way is not searchable)"
	exit 77
fi
drop "$@"
