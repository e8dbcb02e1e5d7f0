#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Every header compiles alone: for each header of include/, libnotifyx/,
# backends/, tools/ and bench/, a .c file that includes it twice (its
# include guard must cover all of it) compiles with the project's include
# paths and warnings, -Werror; and no object-like macro it defines names an
# identifier that the header leaves undeclared (each is used once in that
# .c, and an "undeclared" error fails: the header must include what its
# macros need).  Exit 0 pass, 1 fail, 77 skip (no compiler).
srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
builddir=${top_builddir:-.}
cc=${CC:-cc}
# The headers expected to fail, each with why; one that passes fails the
# test (then take it off the list).  None today.
xfail=""
command -v "$cc" >/dev/null 2>&1 || { echo "SKIP: no C compiler ($cc)"; exit 77; }
[ -f "$builddir/config.h" ] || { echo "SKIP: no config.h in $builddir (configure first)"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/headers.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
warn="-std=gnu11 -Wall -Wextra -Wshadow -Wmissing-prototypes -Wstrict-prototypes -Wpointer-arith -Wformat=2 -Wno-unused-parameter -Werror"
status=0 n=0
cd "$srcdir" || exit 1
for h in include/*.h libnotifyx/*.h backends/*.h tools/*.h bench/*.h; do
	[ -f "$h" ] || continue
	n=$((n + 1))
	dir=$(dirname "$h")
	name=$(basename "$h")
	printf '#include "%s"\n#include "%s"\n' "$name" "$name" >"$tmp/t.c"
	# One use of each object-like macro with a body that the header defines.
	sed -n 's/^#[[:space:]]*define[[:space:]]\{1,\}\([A-Za-z_][A-Za-z0-9_]*\)[[:space:]]\{1,\}[^[:space:]].*/\1/p' "$h" |
		while read -r m; do
			printf 'void nx_use_%s(void);\nvoid nx_use_%s(void) { (void)(%s); }\n' "$m" "$m" "$m"
		done >"$tmp/m.c"
	# shellcheck disable=SC2086 # $warn is several words
	out=$(LC_ALL=C "$cc" $warn -I"$srcdir/include" -I"$srcdir/libnotifyx" -I"$builddir" \
		-I"$srcdir/$dir" -c -o "$tmp/t.o" "$tmp/t.c" 2>&1)
	rc=$?
	cat "$tmp/t.c" "$tmp/m.c" >"$tmp/u.c"
	undeclared=$(LC_ALL=C "$cc" -std=gnu11 -fsyntax-only -I"$srcdir/include" -I"$srcdir/libnotifyx" \
		-I"$builddir" -I"$srcdir/$dir" "$tmp/u.c" 2>&1 | grep -o "'[A-Za-z_0-9]*' undeclared\|undeclared identifier '[A-Za-z_0-9]*'" | sort -u)
	if [ -n "$undeclared" ]; then
		out="a macro uses what the header does not declare: $(echo "$undeclared" | tr '\n' ' ')${out:+
}$out"
		rc=1
	fi
	case " $xfail " in
	*" $h "*)
		if [ "$rc" = 0 ]; then
			echo "FAIL: $h compiles alone now: take it off the list in tests/headers.sh"
			status=1
		else
			echo "ok (expected to fail, see the list in tests/headers.sh): $h"
			echo "$out" | sed 's/^/    /' | head -n 12
		fi ;;
	*)
		if [ "$rc" = 0 ]; then echo "ok: $h"; else
			echo "FAIL: $h does not compile alone:"
			echo "$out" | sed 's/^/    /' | head -n 30
			status=1
		fi ;;
	esac
done
[ "$n" -gt 0 ] || { echo "no headers found under $srcdir"; exit 1; }
exit "$status"
