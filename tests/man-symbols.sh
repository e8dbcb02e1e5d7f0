#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Every symbol the built shared library exports, and every notifyx_*
# function declared in the public header, has a man page man/SYMBOL.3.
# A link page (".so man3/X.3") must point at a page that exists.
# The SYNOPSIS of each page shows the header's prototypes word for word.
# Exit 0 pass, 1 fail, 77 skip.

# The serial-tests harness exports only srcdir (the top source directory,
# since the top Makefile runs the tests) and runs tests in the top build
# directory; top_srcdir and top_builddir may also come from the environment.
here=$(dirname "$0")
top_srcdir=${top_srcdir:-$here/..}
top_builddir=${top_builddir:-.}
man=$top_srcdir/man
header=$top_srcdir/include/notifyx.h
lib=$top_builddir/libnotifyx/.libs/libnotifyx.so
NM=${NM_PROG:-nm}

fail=0
checked=0
tmpfail=$(mktemp "${TMPDIR:-/tmp}/man-symbols.XXXXXX") || exit 1
trap 'rm -f "$tmpfail"' EXIT HUP INT TERM

need_page() { # symbol, where it came from
	checked=$((checked + 1))
	if [ ! -f "$man/$1.3" ]; then
		echo "FAIL: $1 ($2) has no page man/$1.3"
		fail=1
		return
	fi
	first=$(sed -n '1p' "$man/$1.3")
	case $first in
	.so\ *)
		target=${first#.so }
		if [ ! -f "$man/${target##*/}" ]; then
			echo "FAIL: man/$1.3 links to $target, which does not exist"
			fail=1
		fi
		;;
	esac
}

if [ ! -f "$header" ]; then
	echo "FAIL: header $header not found"
	exit 1
fi

# The header without comments, preprocessor lines and their continuation
# lines (a macro's body or a comment's words are no declarations).
code() {
	awk '
		!incom && (/^[[:space:]]*#/ || cont) { cont = /\\$/; next }
		{
			out = ""; line = $0
			while (line != "") {
				if (incom) {
					i = index(line, "*/")
					if (!i) { line = ""; break }
					line = substr(line, i + 2); incom = 0; continue
				}
				i = index(line, "/*")
				if (!i) { out = out line; break }
				out = out substr(line, 1, i - 1); line = substr(line, i + 2); incom = 1
			}
			print out
		}' "$header"
}

# Functions declared in the header: an identifier notifyx_* directly
# followed by "(" at the start of a declarator, outside comments.
funcs=$(code |
	grep -o '\*\{0,1\}notifyx_[a-z0-9_]*[[:space:]]*(' |
	sed -e 's/^\*//' -e 's/[[:space:]]*($//' | sort -u)
if [ -z "$funcs" ]; then
	echo "FAIL: no notifyx_* function found in $header"
	exit 1
fi
for f in $funcs; do
	need_page "$f" "declared in include/notifyx.h"
done
# Function-like macros named like functions (notifyx_for_each_event).
for f in $(sed -n 's/^#define \(notifyx_[a-z0-9_]*\)(.*/\1/p' "$header"); do
	need_page "$f" "a macro of include/notifyx.h"
done

# Each prototype in the header appears, word for word (white space aside),
# in the SYNOPSIS of its page (needs mandoc to render the page).
MANDOC=${MANDOC:-mandoc}
if command -v "$MANDOC" >/dev/null 2>&1 && command -v col >/dev/null 2>&1; then
	protos=$(code | awk '
		{ buf = buf $0 " " }
		END {
			n = length(buf); i = 1; out = ""
			while (i <= n) {
				if (substr(buf, i, 2) == "/*") {
					j = index(substr(buf, i + 2), "*/")
					if (j == 0)
						break
					i += j + 3
					continue
				}
				out = out substr(buf, i, 1)
				i++
			}
			gsub(/[;{}]/, "\n", out)
			print out
		}' | grep '[*[:space:]]notifyx_[a-z0-9_]*(' |
		sed -e 's/static inline//' -e 's/[[:space:]][[:space:]]*/ /g' \
		    -e 's/^ //' -e 's/ $//' -e 's/( /(/g' -e 's/ )/)/g' -e 's/\* /*/g')
	echo "$protos" | while IFS= read -r proto; do
		[ -n "$proto" ] || continue
		f=$(echo "$proto" | sed 's/^.*[* ]\(notifyx_[a-z0-9_]*\)(.*$/\1/')
		page=$man/$f.3
		[ -f "$page" ] || continue  # reported above
		first=$(sed -n '1p' "$page")
		case $first in
		.so\ *) page=$man/${first##*/} ;;
		esac
		[ -f "$page" ] || continue
		syn=$("$MANDOC" -Tascii "$page" 2>/dev/null | col -b |
			awk '/^SYNOPSIS/ { on = 1; next } /^[A-Z]/ { on = 0 } on' |
			tr '\n' ' ' | sed -e 's/[[:space:]][[:space:]]*/ /g' -e 's/( /(/g' -e 's/ )/)/g' \
			    -e 's/\* /*/g')
		case $syn in
		*"$proto;"*) ;;
		*)
			echo "FAIL: the SYNOPSIS of ${page##*/} lacks: $proto;"
			echo 1 >"$tmpfail"
			;;
		esac
	done
else
	echo "note: mandoc or col(1) not found: synopses not compared with the header"
fi
[ -s "$tmpfail" ] && fail=1

if [ ! -f "$lib" ]; then
	echo "SKIP (library part): $lib not built; header functions checked: $checked"
	[ $fail -eq 0 ] && exit 77
	exit 1
fi
if ! command -v "$NM" >/dev/null 2>&1; then
	echo "SKIP (library part): nm not found"
	[ $fail -eq 0 ] && exit 77
	exit 1
fi

# Exported (defined, dynamic) symbols, without version suffixes.
syms=$("$NM" -D --defined-only "$lib" | awk 'NF >= 3 && $2 ~ /^[TtDdBbRrWwVviu]$/ { print $3 }' |
	sed 's/@.*//' | sort -u)
for s in $syms; do
	case $s in
	LIBNOTIFYX_*) continue ;;  # version node names (absolute symbols)
	_init|_fini|_edata|_end|__bss_start) continue ;;
	esac
	need_page "$s" "exported by libnotifyx.so"
	case $s in
	notifyx_*) ;;
	*) echo "FAIL: exported symbol $s lacks the notifyx_ prefix"; fail=1 ;;
	esac
done

# Every exported symbol belongs to a version node.
unversioned=$("$NM" -D --defined-only --with-symbol-versions "$lib" 2>/dev/null |
	awk '$3 ~ /^notifyx_/ && $3 !~ /@/ { print $3 }')
if [ -n "$unversioned" ]; then
	echo "FAIL: exported without a version node: $unversioned"
	fail=1
fi

[ $fail -eq 0 ] && echo "PASS: $checked checks (header functions and exported symbols): every one has a page"
exit $fail
