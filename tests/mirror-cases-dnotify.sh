#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The mirror's deterministic cases on the dnotify backend.
exec "$(dirname "$0")/mirror-cases.sh" dnotify
