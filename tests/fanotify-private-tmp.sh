#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# fanotify-private-tmp.sh COMMAND [ARG]...: runs COMMAND with TMPDIR on a
# tmpfs mounted in a mount namespace of its own, so that a filesystem mark
# hears the test's own activity only.  Exit 77 when that cannot be set up.
if ! command -v unshare >/dev/null 2>&1; then
	echo "SKIP: unshare (util-linux) is needed for a private tmpfs"
	exit 77
fi
# The mount point lives in the build tree, not in a shared /tmp where
# another test's clean-up could remove it (which detaches the mount).
# Filesystem marks whatever the size of the tree (the library's policy takes
# inode marks for small trees): what the tests run through here are for.
NOTIFYX_FANOTIFY_INODE_MAX=${NOTIFYX_FANOTIFY_INODE_MAX-0}
export NOTIFYX_FANOTIFY_INODE_MAX
dir=$(mktemp -d "${top_builddir:-.}/fanpriv.XXXXXX") || exit 1
unshare --mount --propagation private sh -c '
	mount -t tmpfs -o size=512m notifyx-fanpriv "$1" || exit 77
	d=$1; shift
	TMPDIR=$d exec "$@"' sh "$dir" "$@"
status=$?
rmdir "$dir"
exit $status
