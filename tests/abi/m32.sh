#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The library on i386: builds libnotifyx from its sources with gcc -m32 (a
# config.h from the top configure script run for i686), runs the plain-C API
# test tests/abi/m32-events.c against it and against the x86_64 library, and
# requires of the two runs byte-for-byte identical output:
#   layout    sizeof and offsetof of struct notifyx_event and notifyx_config
#   results   every API check and every event, as text
#   events    the raw records notifyx_read returned
# The x86_64 library is the one in the build tree; when that build needs a
# sanitizer's runtime, the same sources are built again with gcc -m64.
#
# Needs gcc-multilib (Debian).  Exit status: 0 identical and every check
# passed, 1 otherwise, 77 skipped (gcc -m32 cannot build or run a program,
# or inotify cannot start here).  About 10 seconds.
set -u
: "${top_srcdir:?}" "${top_builddir:?}"

gcc=${NX_M32_CC:-gcc}
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Can this machine build and run i386 programs at all?
printf '#include <stdio.h>\nint main(void) { return puts("") == EOF; }\n' >"$tmp/t.c"
"$gcc" -m32 -o "$tmp/t" "$tmp/t.c" >"$tmp/t.log" 2>&1 ||
	skip "$gcc -m32 cannot build a program (install gcc-multilib): $(head -n 1 "$tmp/t.log")"
"$tmp/t" >/dev/null 2>&1 || skip "i386 programs do not run on this kernel"

# config.h for i386: the real configure script, run on a copy of what it
# reads (a source tree configured in place refuses to configure elsewhere),
# creating nothing but config.h.
mkdir "$tmp/src" "$tmp/src/include" "$tmp/cfg32"
cp "$top_srcdir/configure" "$top_srcdir/config.h.in" "$tmp/src/" &&
	cp "$top_srcdir/include/notifyx.h" "$tmp/src/include/" &&
	cp -R "$top_srcdir/build-aux" "$tmp/src/" || fail "cannot copy the configure script"
(
	cd "$tmp/cfg32" &&
	../src/configure --no-create -q CC="$gcc -m32" --host=i686-pc-linux-gnu \
		--build="$(sh ../src/build-aux/config.guess)" &&
	./config.status -q config.h
) >"$tmp/cfg32.log" 2>&1 || { cat "$tmp/cfg32.log"; fail "configure for i386 failed"; }

# The library, as Makefile.am builds it: hidden visibility, the version
# script, -z defs, the soname.
srcs=$(ls "$top_srcdir"/libnotifyx/*.c "$top_srcdir"/backends/*.c)
build_lib() { # build_lib -m32|-m64 CONFIG_H_DIR OUTDIR
	mkdir -p "$3" &&
	"$gcc" "$1" -g -O2 -fPIC -fvisibility=hidden -Wall \
		-I"$top_srcdir/include" -I"$top_srcdir/libnotifyx" -I"$2" \
		-shared -Wl,-soname,libnotifyx.so.0 \
		-Wl,--version-script="$top_srcdir/libnotifyx/libnotifyx.sym" -Wl,-z,defs \
		-o "$3/libnotifyx.so.0" $srcs &&
	ln -s libnotifyx.so.0 "$3/libnotifyx.so"
}
build_lib -m32 "$tmp/cfg32" "$tmp/lib32" >"$tmp/lib32.log" 2>&1 ||
	{ cat "$tmp/lib32.log"; fail "the library does not build for i386"; }
file_out=$(file -L "$tmp/lib32/libnotifyx.so" 2>/dev/null) || file_out=
case $file_out in *"Intel 80386"*|"") ;; *) fail "not an i386 library: $file_out" ;; esac

lib64=$top_builddir/libnotifyx/.libs
[ -f "$lib64/libnotifyx.so" ] || fail "$lib64/libnotifyx.so is not built"
case $(readelf -d "$lib64/libnotifyx.so" 2>/dev/null) in
*libasan*|*libubsan*|*libtsan*|*liblsan*)
	echo "the build tree's library needs a sanitizer runtime: building x86_64 from the sources"
	lib64=$tmp/lib64
	build_lib -m64 "$top_builddir" "$lib64" >"$tmp/lib64.log" 2>&1 ||
		{ cat "$tmp/lib64.log"; fail "the library does not build for x86_64"; }
	;;
esac

# The same test program for both.
prog=$top_srcdir/tests/abi/m32-events.c
for arch in 32 64; do
	case $arch in 32) libdir=$tmp/lib32 ;; *) libdir=$lib64 ;; esac
	"$gcc" -m$arch -std=c99 -Wall -Wextra -Werror -I"$top_srcdir/include" \
		-o "$tmp/prog$arch" "$prog" -L"$libdir" -lnotifyx -Wl,-rpath,"$libdir" \
		>"$tmp/prog$arch.log" 2>&1 ||
		{ cat "$tmp/prog$arch.log"; fail "the test program does not build with -m$arch"; }
done

status=0
for arch in 32 64; do
	mkdir "$tmp/out$arch" "$tmp/watch$arch"
	env -u NOTIFYX_BACKEND "$tmp/prog$arch" "$tmp/out$arch" "$tmp/watch$arch"
	rc=$?
	[ $rc = 77 ] && skip "the test program skipped"
	[ $rc = 0 ] || { echo "FAIL: the API test failed on the ${arch}-bit build"; status=1; }
done
[ $status = 0 ] || {
	for arch in 32 64; do
		echo "---- ${arch}-bit results"; grep -v '^ok: ' "$tmp/out$arch/results"
	done
	exit 1
}

for f in layout results; do
	if cmp -s "$tmp/out32/$f" "$tmp/out64/$f"; then
		echo "$f: identical ($(wc -l <"$tmp/out64/$f") lines)"
	else
		echo "FAIL: $f differs between i386 and x86_64:"
		diff -u "$tmp/out64/$f" "$tmp/out32/$f" | sed 's/^/    /'
		status=1
	fi
done
if cmp -s "$tmp/out32/events" "$tmp/out64/events"; then
	echo "events: identical ($(wc -c <"$tmp/out64/events") bytes of records)"
else
	echo "FAIL: the event records differ between i386 and x86_64 (hex, x86_64 first):"
	od -An -tx1 -v "$tmp/out64/events" >"$tmp/hex64"
	od -An -tx1 -v "$tmp/out32/events" >"$tmp/hex32"
	diff -u "$tmp/hex64" "$tmp/hex32" | sed 's/^/    /'
	status=1
fi
exit $status
