#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The layers of HACKING, checked on the sources: who may include what, and
# which library each program links.  Each rule is a grep; the lines that
# break one are printed with the rule.  Exit 0 pass, 1 fail.
srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$srcdir" || exit 1
status=0
# quoted FILE...: "file:line:header" for each #include "header".
quoted() {
	for f in "$@"; do
		[ -f "$f" ] || continue
		grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" |
			sed "s|^\\([0-9]*\\):[^\"]*\"\\([^\"]*\\)\".*|$f:\\1:\\2|"
	done
}
# rule WHY HITS: HITS ("file:line:header" lines that break the rule) are
# printed with the rule, and fail the test.
rule() {
	[ -z "$2" ] && return 0
	echo "FAIL: $1"
	echo "$2" | sed 's/^/    /'
	status=1
}
# The backends: the files that define a backend's table of operations; the
# other files of backends/ are the pieces the backends share.
backends=$(grep -l '^const struct nx_backend nx_backend_' backends/*.c | sed 's|^backends/||; s|\.c$||')
backend_headers=$(cd backends && ls ./*.h | sed 's|^\./||')

# 1. The public header includes system headers only (<...>, no config.h).
rule "include/notifyx.h includes nothing of the project (HACKING: include/)" \
	"$(grep -n -E '^[[:space:]]*#[[:space:]]*include[[:space:]]*("|<config\.h>)' include/notifyx.h)"

# 2. The core does not include a header of backends/: it knows the backends
# only by their tables of operations, declared in nx.h.
hits=$(for h in $backend_headers; do
	quoted libnotifyx/*.c libnotifyx/*.h | grep -E ":(.*/)?$h\$"
done)
rule "libnotifyx/ includes no header of backends/ (HACKING: libnotifyx/)" "$hits"

# 2b. Nor does it name one, even in a comment: not a backend's table, id or
# name, nor the kernel interface it is built on (its functions, headers and
# constants; poll is also poll(2), so only its table, id and name count).
# backends/registry.c is the one place that lists them.
names=$(echo $backends | tr ' ' '|')
upper=$(echo "$names" | tr '[:lower:]' '[:upper:]')
kernel=$(echo $backends | tr ' ' '\n' | grep -v -x poll | tr '\n' '|' | sed 's/|$//')
hits=$([ -z "$names" ] || {
	grep -n -w -E "nx_backend_($names)|NOTIFYX_BACKEND_($upper)" libnotifyx/*.c libnotifyx/*.h
	grep -n -E "\"($names)\"" libnotifyx/*.c libnotifyx/*.h
	[ -z "$kernel" ] || grep -n -i -w -E "($kernel)[a-z0-9_]*" libnotifyx/*.c libnotifyx/*.h
	grep -n -w -E "(IN|FAN|DN)_[A-Z0-9_]+" libnotifyx/*.c libnotifyx/*.h
} | sort -t: -k1,1 -k2,2n -u)
rule "libnotifyx/ names no backend: backends/registry.c lists them (HACKING: libnotifyx/)" "$hits"

# 3. A backend's headers (NAME.h, its pure parts; NAME-int.h, private to its
# files) are included by its own files only: NAME.c and NAME-*.[ch], the
# parts of a backend split into several files.  The shared pieces include
# no backend's header.
hits=$(for f in backends/*.c backends/*.h; do
	self=$(basename "$f"); self=${self%.*}; owner=${self%%-*}
	for b in $backends; do
		[ "$b" = "$owner" ] || quoted "$f" | grep -E ":(.*/)?$b(-[^/]*)?\\.h\$"
	done
done)
rule "backends/: no file includes another backend's header (HACKING: backends/)" "$hits"

# 4. tools/, examples/ and bench/ use <notifyx.h> and headers of their own
# directory (tools/ also config.h), never a path into another directory.
# Examples take no config.h: they are to be copied out of the tree.
# Two exceptions: bench/scan-rate.c, which measures the snapshot engine
# (nx.h and snapshot.h, linked from the convenience library), and
# tools/bench.c, which shares bench/stats.h with the benchmarks.
hits=$(for d in tools examples bench; do
	quoted "$d"/*.c "$d"/*.h | while IFS=: read -r f line h; do
		case $d:$h in tools:config.h) continue ;; esac
		case $f:$h in bench/scan-rate.c:nx.h | bench/scan-rate.c:snapshot.h) continue ;; esac
		case $f:$h in tools/bench.c:stats.h) continue ;; esac
		case $h in */*) echo "$f:$line:$h"; continue ;; esac
		[ -f "$d/$h" ] || echo "$f:$line:$h"
	done
done)
rule "tools/, examples/, bench/: <notifyx.h> and their own headers only (HACKING)" "$hits"
hits=$(grep -n -E '^[[:space:]]*#[[:space:]]*include[[:space:]]*<(nx|libnotifyx/.*|backends/.*)\.h>' \
	tools/*.c tools/*.h examples/*.c bench/*.c bench/*.h)
rule "tools/, examples/, bench/: no private header through <...> either" "$hits"

# 5. No file includes a .c file.
hits=$(for d in include libnotifyx backends tools examples bench tests tests/fault tests/fuzz tests/abi; do
	quoted "$d"/*.c "$d"/*.h
done | grep '\.c$')
rule "no file includes a .c file" "$hits"

# 6. Programs outside the library's tests link the shared library, not the
# convenience library that has the internals (bench/scan-rate excepted).
hits=$(grep -n 'libnxcore\.la' tools/Makemodule.am examples/Makemodule.am bench/Makemodule.am |
	grep -v '^bench/Makemodule\.am:[0-9]*:bench_scan_rate_LDADD')
rule "tools, examples, bench link libnotifyx.la, not libnxcore.la (HACKING)" "$hits"

[ "$status" = 0 ] && echo "the layers of HACKING hold ($(echo "$backends" | wc -w) backends)"
exit "$status"
