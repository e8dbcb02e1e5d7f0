#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The conformance test on the fanotify backend as an unprivileged user
# (nobody, no groups, no capabilities): inode marks instead of filesystem
# marks, no open_by_handle_at.  The test makes its own temporary directories,
# so they belong to that user.  Exit 77 = skip.
dir=${top_builddir:-$(dirname "$0")/..}
exec "$(dirname "$0")/as-nobody.sh" "$dir/tests/conformance" fanotify
