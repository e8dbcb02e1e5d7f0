#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The conformance test on the fanotify backend as an unprivileged user
# (nobody, no groups, no capabilities): inode marks instead of filesystem
# marks, no open_by_handle_at.  The test makes its own temporary directories,
# so they belong to that user.  Exit 77 = skip.
dir=${top_builddir:-$(dirname "$0")/..}
prog="$dir/tests/conformance"
if [ "$(id -u)" != 0 ]; then
	exec "$prog" fanotify # unprivileged already
fi
if ! command -v setpriv >/dev/null 2>&1; then
	echo "SKIP: setpriv (util-linux) is needed to drop privileges"
	exit 77
fi
group=nogroup
getent group nogroup >/dev/null 2>&1 || group=nobody
# The user must be able to reach the program and the library it runs.
if ! setpriv --reuid=nobody --regid="$group" --clear-groups --inh-caps=-all \
	test -x "$prog"; then
	echo "SKIP: user nobody cannot run $prog (a directory on the way is not searchable)"
	exit 77
fi
exec setpriv --reuid=nobody --regid="$group" --clear-groups --inh-caps=-all \
	"$prog" fanotify
