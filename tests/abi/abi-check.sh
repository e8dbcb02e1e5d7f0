#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# ABI check: compares, with abidiff (libabigail), the ABI of what was just
# built with the baselines committed in tests/abi/:
#   libnotifyx.abi       the shared library: its soname, every exported
#                        symbol with its version node, and the types of
#                        their parameters and results (struct notifyx_config)
#   notifyx-types.abi    the public types of <notifyx.h> as an application
#                        compiles them (struct notifyx_event, which no
#                        exported function reaches: notifyx_read moves it as
#                        bytes), through tests/abi/probe.c
# Any difference fails, compatible or not: an added function, a new field at
# the end of a struct, a symbol in another version node.  Macro values and
# field offsets are pinned at compile time by tests/abi/layout.c.
#
# UPDATING THE BASELINES IS A DELIBERATE STEP.  When a change of the ABI is
# intended (a release adds functions in a new version node of
# libnotifyx/libnotifyx.sym, a struct grows), then:
#   1. make abi-update              (runs this script with --update; it
#                                    rewrites the two .abi files in the
#                                    source tree from the current build)
#   2. add a line to NEWS saying what changed in the ABI and why;
#   3. review `git diff tests/abi/` and commit the baselines with the change
#      and the NEWS line.
# Never update the baselines to make this test pass without that NEWS line:
# a difference nobody meant is a bug in the change, not in the baseline.
#
# The baselines are for x86_64; elsewhere the test is skipped.  The library
# must be built with debug information (-g, autoconf's default CFLAGS): without
# it only the symbols are compared and the test reports a skip.  The baselines
# carry no paths, line numbers or parameter names, so an in-tree build, a
# VPATH build, distcheck, -O0..-O2 and sanitizer builds all give the same
# file.
#
# Usage: abi-check.sh [--update]
# Environment: top_srcdir, top_builddir (exported by make check); CC.
# Exit status: 0 same ABI, 1 different (the difference is printed), 77 skipped.
set -u
: "${top_srcdir:?}" "${top_builddir:?}"

update=no
[ "${1-}" = --update ] && update=yes

base=$top_srcdir/tests/abi
lib=$top_builddir/libnotifyx/.libs/libnotifyx.so
cc=${CC:-cc}

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

for t in abidw abidiff; do
	command -v "$t" >/dev/null 2>&1 ||
		skip "$t is not installed (Debian: apt-get install abigail-tools)"
done
[ -f "$lib" ] || fail "$lib is not built"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# What the baselines record, and nothing that depends on where or how the
# build ran: no corpus, compilation-directory or source paths, no line
# numbers, no parameter names (not ABI), no DT_NEEDED (sanitizer builds add
# theirs); only the types the public header declares, reachable from
# exported symbols; type ids from hashes so an update diffs readably.
dump() {
	abidw --no-corpus-path --no-comp-dir-path --no-show-locs --short-locs \
		--no-parameter-names --no-elf-needed \
		--headers-dir "$top_srcdir/include" --drop-private-types \
		--exported-interfaces-only --type-id-style hash \
		--out-file "$2" "$1" || fail "abidw failed on $1"
}

# The header's types, as an application compiles them.
"$cc" -g -O0 -std=c11 -shared -fPIC -I"$top_srcdir/include" \
	-o "$tmp/libnxprobe.so" "$base/probe.c" || fail "cannot build the probe with $cc"

dump "$lib" "$tmp/libnotifyx.abi"
dump "$tmp/libnxprobe.so" "$tmp/notifyx-types.abi"

grep -q '<abi-instr' "$tmp/libnotifyx.abi" || nodebug=yes
nodebug=${nodebug:-no}

if [ $update = yes ]; then
	[ $nodebug = no ] || fail "$lib has no debug information: build with -g to update the baselines"
	case $(sed -n 1p "$tmp/libnotifyx.abi") in
	*"architecture='elf-amd-x86_64'"*) ;;
	*) fail "the baselines are x86_64 ones: update them from an x86_64 build" ;;
	esac
	for f in libnotifyx.abi notifyx-types.abi; do
		if cmp -s "$tmp/$f" "$base/$f"; then
			echo "tests/abi/$f: unchanged"
		else
			cp "$tmp/$f" "$base/$f" || fail "cannot write $base/$f"
			echo "tests/abi/$f: UPDATED; add a NEWS line saying what changed in the ABI"
		fi
	done
	exit 0
fi

arch() { sed -n "1s/.*architecture='\([^']*\)'.*/\1/p" "$1"; }
[ "$(arch "$tmp/libnotifyx.abi")" = "$(arch "$base/libnotifyx.abi")" ] ||
	skip "the baselines are for $(arch "$base/libnotifyx.abi"), this build is $(arch "$tmp/libnotifyx.abi")"

status=0
compare() {
	# abidiff exit status: 0 same; bit 4 an ABI change; bit 8 an
	# incompatible one; 1 and 2 errors.  Everything but 0 fails here.
	abidiff "$base/$1" "$tmp/$1" >"$tmp/diff" 2>&1
	rc=$?
	if [ $rc -eq 0 ]; then
		echo "tests/abi/$1: same ABI"
	else
		echo "tests/abi/$1: the ABI CHANGED (abidiff exit status $rc):"
		sed 's/^/    /' "$tmp/diff"
		status=1
	fi
}

if [ $nodebug = yes ]; then
	# abidiff would compare the symbols only and call that a success.
	compare libnotifyx.abi
	[ $status = 0 ] || exit 1
	skip "$lib has no debug information (build with -g): only its symbols were compared"
fi

compare libnotifyx.abi
compare notifyx-types.abi
if [ $status != 0 ]; then
	cat <<EOF

The exported ABI differs from the committed baseline.  If this change is
unintended, fix it.  If it is intended: make abi-update, add a NEWS line,
and commit both (see the top of tests/abi/abi-check.sh).
EOF
fi
exit $status
