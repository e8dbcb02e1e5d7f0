#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# <notifyx.h> in C++ (C++11 and C++17, -Wall -Wextra -Werror): the extern "C"
# block, the inline functions and notifyx_for_each_event compile.  Not
# -pedantic: ISO C++ has no flexible array member, which struct
# notifyx_event has (names[]).  Exit 0 pass, 1 fail, 77 skip (no C++ compiler).
top_srcdir=${top_srcdir:-$(dirname "$0")/../..}
CXX=${CXX:-c++}
command -v "$CXX" >/dev/null 2>&1 || { echo "SKIP: no C++ compiler ($CXX)"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/abi-cxx.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/t.cc" <<'EOC'
#include <notifyx.h>
#include <cstdio>

int count(const void *buf, ssize_t n);
int count(const void *buf, ssize_t n)
{
	const struct notifyx_event *ev;
	int k = 0;

	notifyx_for_each_event(ev, buf, n) {
		const char *old = notifyx_event_old_path(ev);
		std::printf("%s %s %s\n", notifyx_event_name(ev->mask), notifyx_event_path(ev),
			    old ? old : "");
		k++;
	}
	return k;
}
EOC
rc=0
for std in c++11 c++17; do
	if out=$("$CXX" -std=$std -Wall -Wextra -Werror -I"$top_srcdir/include" -c -o "$tmp/t.o" "$tmp/t.cc" 2>&1); then
		echo "ok: $std"
	else
		echo "FAIL: <notifyx.h> does not compile as $std:"
		echo "$out"
		rc=1
	fi
done
exit $rc
