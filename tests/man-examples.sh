#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Extract the program of each man page's EXAMPLES section (the raw lines
# between '.\" EXAMPLE BEGIN' and '.\" EXAMPLE END', with the groff escapes
# '\&' removed and '\e' turned back into a backslash), compile it under
# -std=c99 and -std=c11 with -Wall -Wextra -Werror -pedantic against the
# source tree's header and the built library, and run it (30 s timeout).
# Every page of sections 3 and 7 that is not a link page must have one.
# Exit 0 pass, 1 fail, 77 skip.

# The serial-tests harness exports only srcdir (the top source directory,
# since the top Makefile runs the tests) and runs tests in the top build
# directory; top_srcdir and top_builddir may also come from the environment.
here=$(dirname "$0")
top_srcdir=${top_srcdir:-$here/..}
top_builddir=${top_builddir:-.}
CC=${CC:-cc}
man=$top_srcdir/man
inc=$(cd "$top_srcdir/include" && pwd) || exit 1
libdir=$(cd "$top_builddir" && pwd)/libnotifyx/.libs
WARN="-Wall -Wextra -Werror -pedantic"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/man-examples.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT HUP INT TERM

if [ -f "$libdir/libnotifyx.so" ]; then
	linked=yes
else
	linked=no
	echo "note: $libdir/libnotifyx.so is not built: syntax check only"
fi
if command -v timeout >/dev/null 2>&1; then
	TIMEOUT="timeout 30"
else
	TIMEOUT=
fi

if command -v flock >/dev/null 2>&1 && exec 9</tmp; then
	lock=yes
else
	lock=
fi

extract() { # page -> C source on stdout
	sed -n '/^\.\\" EXAMPLE BEGIN/,/^\.\\" EXAMPLE END/p' "$1" |
		sed -e '1d' -e '$d' -e 's/\\&//g' -e 's/\\e/\\/g'
}

fail=0
n=0
for page in "$man"/*.3 "$man"/*.7; do
	[ -f "$page" ] || continue
	name=${page##*/}
	case $(sed -n '1p' "$page") in
	.so\ *) continue ;;
	esac
	if ! grep -q '^\.\\" EXAMPLE BEGIN' "$page"; then
		echo "FAIL: $name has no EXAMPLE BEGIN/END program"
		fail=1
		continue
	fi
	if [ "$(grep -c '^\.\\" EXAMPLE BEGIN' "$page")" -ne 1 ] ||
	   [ "$(grep -c '^\.\\" EXAMPLE END' "$page")" -ne 1 ]; then
		echo "FAIL: $name must have exactly one EXAMPLE BEGIN and one EXAMPLE END"
		fail=1
		continue
	fi
	n=$((n + 1))
	src=$tmp/$name.c
	extract "$page" >"$src"
	# What the program makes with mkdtemp: "/tmp/notifyx-NAME.XXXXXX".
	tmpls=$(grep -o '"/tmp/[^"]*XXXXXX"' "$src" | sed -e 's/"//g' -e 's/XXXXXX$/*/')
	for std in c99 c11; do
		exe=$tmp/$name.$std
		if [ $linked = yes ]; then
			out=$($CC -std=$std $WARN -I"$inc" -o "$exe" "$src" \
				-L"$libdir" -lnotifyx 2>&1)
		else
			out=$($CC -std=$std $WARN -I"$inc" -fsyntax-only "$src" 2>&1)
		fi
		if [ $? -ne 0 ]; then
			echo "FAIL: $name: does not compile with -std=$std:"
			echo "$out"
			fail=1
			continue
		fi
		[ -n "$out" ] && echo "$out"
		[ $linked = yes ] || continue
		# Runs of this script in other build trees make the same names
		# in /tmp: take turns, so that the check of what is left behind
		# sees only this run's.
		[ -n "$lock" ] && flock -w 300 9
		before=$(ls -d $tmpls 2>/dev/null)
		mkdir "$tmp/run" || exit 1
		out=$(cd "$tmp/run" &&
			LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
			$TIMEOUT "$exe" </dev/null 2>&1)
		rc=$?
		if [ $rc -ne 0 ]; then
			echo "FAIL: $name (-std=$std) exited with status $rc:"
			echo "$out" | sed 's/^/  | /'
			fail=1
		else
			echo "ok: $name (-std=$std)"
		fi
		after=$(ls -d $tmpls 2>/dev/null)
		if [ "$before" != "$after" ]; then
			echo "FAIL: $name (-std=$std) left files behind in /tmp:"
			echo "$after" | grep -vxF "$before" | sed 's/^/  | /'
			fail=1
		fi
		[ -n "$lock" ] && flock -u 9
		if [ -n "$(ls -A "$tmp/run")" ]; then
			echo "FAIL: $name (-std=$std) left files in its working directory"
			fail=1
		fi
		rm -rf "$tmp/run"
	done
done

if [ $n -eq 0 ]; then
	echo "FAIL: no example programs found in $man"
	exit 1
fi
if [ $fail -eq 0 ] && [ $linked = no ]; then
	echo "SKIP: $n examples compile (syntax only); the library is not built, so none was run"
	exit 77
fi
[ $fail -eq 0 ] && echo "PASS: $n examples compiled under c99 and c11 and ran"
exit $fail
