#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The mirror's deterministic cases on the fanotify backend with inode marks:
# as root it runs as user nobody (setpriv).  Filesystem marks:
# tests/mirror-cases-fanotify-fs.sh.
here=$(dirname "$0")
exec "$here/as-nobody.sh" "$here/mirror-cases.sh" fanotify
