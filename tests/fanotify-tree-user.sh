#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/fanotify-tree as user nobody (inode marks).  Exit 77 = skip.
dir=${top_builddir:-$(dirname "$0")/..}
exec "$(dirname "$0")/as-nobody.sh" "$dir/tests/fanotify-tree"
