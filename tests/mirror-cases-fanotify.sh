#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The mirror's deterministic cases on the fanotify backend.  As root its trees
# use filesystem marks, which hear the whole filesystem: the mirror's notion
# of quiet (the descriptor unreadable for a while) never comes on a busy /tmp,
# so the cases run in a tmpfs of a private mount namespace (see notifyx(7),
# the cost of activity elsewhere).
here=$(dirname "$0")
[ "$(id -u)" != 0 ] && exec "$here/mirror-cases.sh" fanotify
exec "$here/fanotify-private-tmp.sh" "$here/mirror-cases.sh" fanotify
