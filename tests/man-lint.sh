#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# mandoc -Tlint -W warning over every man page; any message fails.
# Link pages (".so man3/X.3") are checked through a manN/ tree that
# mirrors the installed layout, so that mandoc resolves them; mandoc's
# "WARNING: .so is fragile" is expected for them and ignored.
# Exit 0 pass, 1 fail, 77 skip.

# The serial-tests harness exports only srcdir (the top source directory,
# since the top Makefile runs the tests) and runs tests in the top build
# directory; top_srcdir and top_builddir may also come from the environment.
here=$(dirname "$0")
top_srcdir=${top_srcdir:-$here/..}
MANDOC=${MANDOC:-mandoc}

if ! command -v "$MANDOC" >/dev/null 2>&1; then
	echo "SKIP: mandoc not found (install mandoc to lint the man pages)"
	exit 77
fi

man=$(cd "$top_srcdir/man" && pwd) || exit 1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/man-lint.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT HUP INT TERM

fail=0
n=0
for page in "$man"/*.[0-9]; do
	[ -f "$page" ] || continue
	name=${page##*/}
	sec=${name##*.}
	mkdir -p "$tmp/man$sec"
	ln -s "$page" "$tmp/man$sec/$name"
done
cd "$tmp" || exit 1
for page in man*/*; do
	n=$((n + 1))
	out=$("$MANDOC" -Tlint -W warning "$page" 2>&1)
	case $(sed -n '1p' "$page") in
	.so\ *)
		# Link pages are ".so" by the man-pages convention, which mandoc
		# calls fragile; that one message is expected, any other is not.
		if [ "$(wc -l <"$page")" -ne 1 ]; then
			echo "FAIL: $page: a link page must hold only its .so line"
			fail=1
		fi
		out=$(printf '%s\n' "$out" | grep -v 'WARNING: \.so is fragile')
		;;
	esac
	if [ -n "$out" ]; then
		echo "$out"
		fail=1
	fi
	# A rendering must not be empty (e.g. a broken .so link).
	if [ -z "$("$MANDOC" -Tascii "$page" 2>/dev/null)" ]; then
		echo "FAIL: $page renders to nothing"
		fail=1
	fi
done
if [ $n -eq 0 ]; then
	echo "FAIL: no man pages found in $man"
	exit 1
fi
[ $fail -eq 0 ] && echo "PASS: $n pages lint clean"
exit $fail
