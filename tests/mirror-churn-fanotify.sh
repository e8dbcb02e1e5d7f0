#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The mirror test on the fanotify backend with inode marks: as root it runs
# as user nobody (setpriv).  With filesystem marks (root) the mirror does not
# yet keep up with the churn: run tests/fanotify-private-tmp.sh
# tests/mirror-churn.sh fanotify by hand to see it (see the BUGS of notifyx(7)).
here=$(dirname "$0")
exec "$here/as-nobody.sh" "$here/mirror-churn.sh" fanotify
