#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The mirror test on the fanotify backend; as root in a private tmpfs (see
# tests/mirror-cases-fanotify.sh for why).
here=$(dirname "$0")
[ "$(id -u)" != 0 ] && exec "$here/mirror-churn.sh" fanotify
exec "$here/fanotify-private-tmp.sh" "$here/mirror-churn.sh" fanotify
