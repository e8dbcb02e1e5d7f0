#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/fanotify-enodev.sh as user nobody (in a user namespace, inode marks).
# Exit 77 = skip.
exec "$(dirname "$0")/as-nobody.sh" "$(dirname "$0")/fanotify-enodev.sh"
