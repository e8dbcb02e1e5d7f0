# SPDX-License-Identifier: LGPL-2.1-or-later
#
# tool-lib.sh: what the tests of notifyx(1) share, sourced by tests/tool-*.sh.
# The caller may set backend first (it then shows in the messages).  This
# file sets NX (the tool, maybe a libtool wrapper script), me (a name for
# messages) and failures, makes the work directory $tmp (removed at exit, with
# $pid and every pid listed in $tmp/*.pids killed), and writes there
# nxdecode.py, a Python module (on PYTHONPATH) with cdecode(): an independent
# reading of the text format's escapes (see tools/escape.c).

top_builddir=${top_builddir:-.}
NX=$top_builddir/tools/notifyx
me=$(basename "$0" .sh)${backend:+ ($backend)}

skip() { echo "SKIP: $*"; exit 77; }
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
note() { echo "$me: $*"; }

# finish: the verdict, as the exit status.
finish() {
	if [ $failures -ne 0 ]; then
		echo "$me: $failures failure(s)"
		exit 1
	fi
	echo "$me: ok"
	exit 0
}

[ -x "$NX" ] || { echo "FAIL: $NX is not built"; exit 1; }

# need COMMAND REASON: skips unless COMMAND is there.
need() { command -v "$1" >/dev/null 2>&1 || skip "$2"; }

# need_backend: skips unless $backend starts here, with the tool's reason.
need_backend() {
	"$NX" backends 2>/dev/null | grep -q "^$backend yes " ||
		skip "the $backend backend does not start here: $("$NX" backends 2>&1 | grep "^$backend")"
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/$(basename "$0" .sh).XXXXXX") || exit 1
pid=
cleanup() {
	if [ -n "$pid" ]; then kill -KILL "$pid" 2>/dev/null; fi
	# whatever a failed test left: every pid its commands wrote down
	cat "$tmp"/*.pids 2>/dev/null | while read -r p; do kill -KILL "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

cat >"$tmp/nxdecode.py" <<'PY'
def cdecode(b):
    """Decode the text format's escapes (see tools/escape.c)."""
    out = bytearray(); i = 0
    simple = {ord('n'): 10, ord('t'): 9, ord('r'): 13, ord('\\'): 92, ord('"'): 34}
    while i < len(b):
        c = b[i]
        if c < 0x20 or c == 0x7f:
            raise ValueError('raw control byte %#x in %r' % (c, b))
        if c != 92:
            out.append(c); i += 1; continue
        e = b[i + 1]
        if e in simple:
            out.append(simple[e]); i += 2
        elif e == ord('x'):
            out.append(int(b[i + 2:i + 4], 16)); i += 4
        else:
            raise ValueError('bad escape in %r' % b)
    return bytes(out)
PY
PYTHONPATH=$tmp${PYTHONPATH:+:$PYTHONPATH}
export PYTHONPATH

# usage_error ARGS...: notifyx ARGS must exit 2 with a message on stderr
# (at once: a command line taken by mistake would watch; timeout ends it).
usage_error() {
	timeout 20 "$NX" "$@" >/dev/null 2>"$tmp/e"
	rc=$?
	[ $rc -eq 2 ] || fail "notifyx $*: status $rc, want 2 (usage error)"
	[ -s "$tmp/e" ] || fail "notifyx $*: no message on stderr"
}

# reap TENTHS MESSAGE: waits (TENTHS of a second at most) for $pid to end,
# else fails with MESSAGE and kills it; sets rc.
reap() {
	k=0
	while kill -0 "$pid" 2>/dev/null && [ $k -lt "$1" ]; do
		sleep 0.1
		k=$((k + 1))
	done
	if kill -0 "$pid" 2>/dev/null; then
		fail "$2"
		kill -KILL "$pid" 2>/dev/null
	fi
	wait "$pid"
	rc=$?
	pid=
}

# lines FILE: its number of lines (0 when missing).
lines() { if [ -f "$1" ]; then wc -l <"$1"; else echo 0; fi; }

# wait_lines FILE N: until FILE has at least N lines (30 s at most).
wait_lines() {
	k=0
	while [ "$(lines "$1")" -lt "$2" ] && [ $k -lt 300 ]; do
		sleep 0.1
		k=$((k + 1))
	done
	[ "$(lines "$1")" -ge "$2" ]
}

# wait_match FILE PYTHON-REGEX: until a line of FILE matches (30 s at most).
wait_match() {
	python3 - "$1" "$2" <<'PY'
import re, sys, time
for _ in range(300):
    try:
        with open(sys.argv[1], 'rb') as f:
            if any(re.search(sys.argv[2].encode(), l) for l in f):
                sys.exit(0)
    except FileNotFoundError:
        pass
    time.sleep(0.1)
sys.exit(1)
PY
}

# start_watch OUT DIR ARGS...: $launch notifyx watch ARGS DIR in the
# background, and waits (30 s at most) until it has reported a probe file in
# its format: the watch is in place.
launch=
start_watch() {
	out=$1 d=$2
	shift 2
	# Emptied here first: the redirection below is made by the background
	# child once it runs, which on a loaded machine can be after the first
	# grep below, and a previous watch's output in OUT (a loop that reuses
	# it) would pass for this one's probe before this one watches.
	: >"$out"
	$launch "$NX" watch "$@" "$d" >"$out" 2>"$out.err" &
	pid=$!
	k=0
	while [ $k -lt 300 ]; do
		: >"$d/ready.$k"
		if grep -aqs 'ready\.' "$out"; then
			rm -f "$d"/ready.*
			sleep 0.2 # the deletions of the probes, on a scanning backend
			return 0
		fi
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
		k=$((k + 1))
	done
	fail "notifyx watch $* $d never reported a probe file; stderr: $(cat "$out.err")"
	return 1
}
