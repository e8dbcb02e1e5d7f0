#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The RESCAN mirror test on the fanotify backend with inode marks: as root it
# runs as user nobody (setpriv).  Filesystem marks: mirror-rescan-fanotify-fs.sh.
here=$(dirname "$0")
exec "$here/as-nobody.sh" "$here/mirror-rescan.sh" fanotify
