#!/bin/sh
# Installs the library into a staging directory and builds a program against
# it through pkg-config, as an application would.
set -e
: "${top_builddir:?}" "${top_srcdir:?}"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
make -s -C "$top_builddir" install DESTDIR="$stage" >/dev/null
pc=$(find "$stage" -name libnotifyx.pc)
[ -n "$pc" ] || { echo "libnotifyx.pc was not installed"; exit 1; }
PKG_CONFIG_LIBDIR=$(dirname "$pc")
export PKG_CONFIG_SYSROOT_DIR="$stage" PKG_CONFIG_LIBDIR
cat >"$stage/prog.c" <<'C'
#include <notifyx.h>
#include <stdio.h>
#include <string.h>
int main(void)
{
	struct notifyx *nx = notifyx_open(NULL);
	char v[32];
	snprintf(v, sizeof v, "%d.%d.%d", NOTIFYX_VERSION_MAJOR, NOTIFYX_VERSION_MINOR,
		 NOTIFYX_VERSION_PATCH);
	if (!nx || strcmp(notifyx_version(), v) != 0)
		return 1;
	printf("%s %s\n", notifyx_version(), notifyx_backend_name(notifyx_backend(nx)));
	return notifyx_close(nx);
}
C
# shellcheck disable=SC2046 # the flags are words to split
${CC:-cc} -std=c99 -Wall -Werror -pedantic $(pkg-config --cflags libnotifyx) \
	-o "$stage/prog" "$stage/prog.c" $(pkg-config --libs libnotifyx)
LD_LIBRARY_PATH="$(dirname "$(find "$stage" -name 'libnotifyx.so' | head -n 1)")" "$stage/prog"
