#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The mirror's deterministic cases on the poll backend.
exec "$(dirname "$0")/mirror-cases.sh" poll
