#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The options of notifyx(1) that come from inotifywait, entr and watchexec,
# on one backend (argument 1, else $NOTIFYX_TEST_BACKEND, else inotify):
#  - watch leaves out the events of reading (open, access, close_nowrite)
#    unless -e all;
#  - --include, --ext and how they combine with -x; -0; --timefmt and %T;
#    --fromfile (a file and standard input); --list; --rescan with
#    --queue-max (an overflow repaired); --no-follow; --xdev (as
#    root, in a mount namespace of its own, on a tmpfs mounted in the tree);
#  - run: --postpone, --include/--ext, "/_", NOTIFYX_PATHS/EVENTS/DROPPED,
#    --signal with --restart, --clear.
# Exit: 0 pass, 1 fail, 77 skip (with the reason).

set -u

# --xdev mounts a tmpfs: in a mount namespace of this test's own, which
# takes the mount away with it whatever happens.
if [ -z "${NX_TOOL_OPTIONS_NS:-}" ] && [ "$(id -u)" -eq 0 ] &&
	unshare --mount --propagation private true 2>/dev/null; then
	NX_TOOL_OPTIONS_NS=1 exec unshare --mount --propagation private "$0" "$@"
fi

backend=${1:-${NOTIFYX_TEST_BACKEND:-inotify}}
lib=$(dirname "$0")/tool-lib.sh
# shellcheck source=SCRIPTDIR/tool-lib.sh
. "$lib"
need python3 "python3 is needed to check the output"
need_backend

case $backend in
dnotify|poll) scanning=1 ;;
*) scanning=0 ;;
esac

stop() {
	kill -TERM "$pid" 2>/dev/null
	wait "$pid"
	rc=$?
	pid=
	[ $rc -eq 0 ] || fail "notifyx ended by SIGTERM: status $rc, want 0"
}

# relpaths OUT: the %r lines of OUT but the probes, sorted, on one line.
relpaths() { grep -av '^ready\.' "$1" | sort | tr '\n' ' '; }

# ---- the default events leave reading out ---------------------------------------
d=$tmp/read
mkdir "$d"
echo data >"$d/old"
if start_watch "$tmp/read.out" "$d"; then
	cat "$d/old" >/dev/null
	ls "$d" >/dev/null
	: >"$d/done"
	wait_match "$tmp/read.out" '"[^"]*/done"' || fail "default events: the last event never came"
	stop
	grep -Eq '^(open|access|close_nowrite) ' "$tmp/read.out" &&
		fail "default events: reads reported: $(grep -E '^(open|access|close_nowrite) ' "$tmp/read.out" | head -3)"
fi
if "$NX" backends | grep "^$backend yes" | grep -q 'open'; then
	if start_watch "$tmp/all.out" "$d" -e all; then
		cat "$d/old" >/dev/null
		: >"$d/done2"
		wait_match "$tmp/all.out" '"[^"]*/done2"' || fail "-e all: the last event never came"
		stop
		grep -q '^open "[^"]*/old"$' "$tmp/all.out" || fail "-e all: no open of old: $(cat "$tmp/all.out")"
		grep -q '^close_nowrite "[^"]*/old"$' "$tmp/all.out" ||
			fail "-e all: no close_nowrite of old: $(cat "$tmp/all.out")"
	fi
fi
note "default events: done"

# ---- --include, --ext, -x ------------------------------------------------------------
d=$tmp/inc
mkdir "$d"
if start_watch "$tmp/inc.out" "$d" -r -e create,rename --format=%r --ext c,.h \
	--include 'keep*' --include 'sub/*.txt' --include 'ready.*' -x 'skip*'; then
	for n in a.c b.h c.hh keep.txt other.txt skip.c .c; do
		: >"$d/$n"
	done
	mv "$d/other.txt" "$d/renamed.c" # the new name matches
	mkdir "$d/sub"
	: >"$d/sub/x.c"
	: >"$d/sub/y.txt"  # matches sub/*.txt
	: >"$d/sub/z.json"
	: >"$d/zz.c"
	wait_match "$tmp/inc.out" '^zz\.c$' || fail "include: the last event never came"
	stop
	want="a.c b.h keep.txt renamed.c sub/x.c sub/y.txt zz.c "
	got=$(relpaths "$tmp/inc.out")
	if [ $scanning -eq 1 ]; then
		# a scan may see other.txt only after its rename
		got=$(grep -av '^ready\.' "$tmp/inc.out" | sort -u | tr '\n' ' ')
	fi
	[ "$got" = "$want" ] || fail "include/ext: got '$got', want '$want'"
fi
for args in "--ext=" "--ext=c,,h" "--ext=a/b"; do
	# shellcheck disable=SC2086
	usage_error watch $args "$d"
done
note "--include, --ext: done"

# ---- -0 and --timefmt -------------------------------------------------------------------
d=$tmp/fmt
mkdir "$d"
if start_watch "$tmp/null.out" "$d" -e create -0; then
	: >"$d/x"
	wait_match "$tmp/null.out" '/x\x00' || fail "-0: no NUL-terminated path: $(od -c "$tmp/null.out" | head)"
	stop
	[ "$(tr -cd '\n' <"$tmp/null.out" | wc -c)" -eq 0 ] || fail "-0: newlines in the output"
fi
year=$(date +%Y)
if start_watch "$tmp/tf.out" "$d" -e create --timefmt '%Y<'; then
	: >"$d/y"
	wait_match "$tmp/tf.out" '/y"$' || fail "--timefmt: the event never came"
	stop
	grep -q "^$year< create \"$d/y\"\$" "$tmp/tf.out" ||
		fail "--timefmt with text: $(cat "$tmp/tf.out")"
fi
if start_watch "$tmp/tt.out" "$d" -e create --format='%T|%e|%r' ; then
	: >"$d/z"
	wait_match "$tmp/tt.out" '\|z$' || fail "%T: the event never came"
	stop
	grep -Eq "^$year-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}[+-][0-9]{4}\\|create\\|z\$" "$tmp/tt.out" ||
		fail "%T without --timefmt: $(cat "$tmp/tt.out")"
fi
if start_watch "$tmp/tt2.out" "$d" -e create --timefmt '%Y' --format='%T%%%T|%r' ; then
	: >"$d/w"
	wait_match "$tmp/tt2.out" '\|w$' || fail "%T: the event never came"
	stop
	grep -q "^$year%$year|w\$" "$tmp/tt2.out" || fail "%T with --timefmt: $(cat "$tmp/tt2.out")"
fi
usage_error watch --timefmt '%H' --format=json "$d"
usage_error watch --timefmt '%H' -0 "$d"
note "-0, --timefmt: done"

# ---- --fromfile -------------------------------------------------------------------------
# A PATH from the file and one from the command line (which start_watch
# probes); then a file on standard input.
d1=$tmp/ff1 d2=$tmp/ff2 d3=$tmp/ff3
mkdir "$d1" "$d2" "$d3"
printf '\n%s\n\n' "$d2" >"$tmp/list"
if start_watch "$tmp/ff.out" "$d1" -e create --format=%p --fromfile "$tmp/list"; then
	: >"$d2/in2"
	: >"$d1/in1"
	{ wait_match "$tmp/ff.out" '/in1$' && wait_match "$tmp/ff.out" '/in2$'; } ||
		fail "--fromfile: got $(cat "$tmp/ff.out")"
	stop
fi
echo "$d3" >"$tmp/list3"
# (a background job's standard input is /dev/null unless redirected)
# shellcheck disable=SC2317 # called through $launch
from_list3() { exec "$@" <"$tmp/list3"; }
launch=from_list3
if start_watch "$tmp/ffs.out" "$d1" -e create --format=%p --fromfile=-; then
	: >"$d3/in3"
	wait_match "$tmp/ffs.out" '/in3$' || fail "--fromfile=-: got $(cat "$tmp/ffs.out")"
	stop
fi
launch=
"$NX" watch --fromfile "$tmp/no-such-list" >/dev/null 2>"$tmp/e"
rc=$?
{ [ $rc -eq 1 ] && grep -q "no-such-list: No such file or directory" "$tmp/e"; } ||
	fail "--fromfile of a missing file: status $rc, stderr $(cat "$tmp/e")"
note "--fromfile: done"

# ---- --list ------------------------------------------------------------------------------
d=$tmp/list.d
mkdir -p "$d/sub"
: >"$d/a"
: >"$d/sub/b"
"$NX" watch -b "$backend" -r --list -e create --format='%e %f %r' -n 3 -t 30 "$d" \
	>"$tmp/list.out" 2>"$tmp/list.err"
rc=$?
[ $rc -eq 0 ] || fail "--list: status $rc; stderr: $(cat "$tmp/list.err")"
[ "$(sort "$tmp/list.out" | tr '\n' '/')" = "create isdir,synthetic sub/create synthetic a/create synthetic sub/b/" ] ||
	fail "--list: got $(cat "$tmp/list.out")"
[ "$(grep -n ' sub$' "$tmp/list.out" | cut -d: -f1)" -lt \
	"$(grep -n ' sub/b$' "$tmp/list.out" | cut -d: -f1)" ] 2>/dev/null ||
	fail "--list: sub/b not after sub: $(cat "$tmp/list.out")"
# The end of the listing: a line "sync" with the watched path, last; not
# with -0 (a path that did not change), and not counted by -n.
"$NX" watch -b "$backend" -r --list -e create -t 1 "$d" >"$tmp/list.out" 2>"$tmp/list.err"
# (the scanning backends flag every event synthetic)
tail -n 1 "$tmp/list.out" | grep -q -x -F -e "sync \"$d\"" -e "sync synthetic \"$d\"" &&
	[ "$(grep -c '^sync' "$tmp/list.out")" -eq 1 ] ||
	fail "--list: no final sync line: $(cat "$tmp/list.out" "$tmp/list.err")"
"$NX" watch -b "$backend" -r --list -e create -0 -t 1 "$d" >"$tmp/list.out" 2>"$tmp/list.err"
[ "$(tr '\0' '\n' <"$tmp/list.out" | sort | tr '\n' ' ')" = "$d/a $d/sub $d/sub/b " ] ||
	fail "--list -0: got $(tr '\0' ' ' <"$tmp/list.out")"
mkdir "$d/empty"
"$NX" watch -b "$backend" -r --list -1 -t 1 "$d/empty" >"$tmp/list.out" 2>"$tmp/list.err"
rc=$?
[ $rc -eq 3 ] || fail "--list -1 of an empty tree: status $rc, want 3 (sync is not an event of -1)"
usage_error watch --list -e delete "$d"
note "--list: done"

# ---- --rescan, --queue-max ---------------------------------------------------------------
# 200 files made while notifyx is stopped, with room for 4 events: an
# overflow, then the files the repair found, then a sync line.
d=$tmp/rescan
mkdir "$d"
if start_watch "$tmp/rescan.out" "$d" -r --rescan --queue-max=4 -e create --format='%e %r'; then
	kill -STOP "$pid"
	i=0
	while [ $i -lt 200 ]; do
		: >"$d/f$i"
		i=$((i + 1))
	done
	kill -CONT "$pid"
	wait_match "$tmp/rescan.out" '^sync' || fail "--rescan: no sync line: $(head -c 1000 "$tmp/rescan.out")"
	stop
	grep -aq '^overflow' "$tmp/rescan.out" || fail "--rescan: no overflow with --queue-max=4"
	[ "$(sed -n '/^overflow/,$p' "$tmp/rescan.out" | tail -n 1)" = "sync " ] ||
		fail "--rescan: the sync line is not last after the overflow: $(tail -n 3 "$tmp/rescan.out")"
	got=$(grep -a '^create f' "$tmp/rescan.out" | sort -u | wc -l)
	[ "$got" -eq 200 ] || fail "--rescan: $got of the 200 files reported"
fi
usage_error watch --queue-max=0 "$d"
usage_error watch --queue-max=x "$d"
note "--rescan: done"

# ---- --no-follow ----------------------------------------------------------------------------
ln -s "$d" "$tmp/link"
"$NX" watch -b "$backend" -r -t 0.2 "$tmp/link" >/dev/null 2>"$tmp/e"
rc=$?
[ $rc -eq 3 ] || fail "-r on a link to a directory: status $rc, want 3; stderr: $(cat "$tmp/e")"
"$NX" watch -b "$backend" -r --no-follow -t 0.2 "$tmp/link" >/dev/null 2>"$tmp/e"
rc=$?
{ [ $rc -eq 1 ] && grep -qx "notifyx: $tmp/link: Not a directory" "$tmp/e"; } ||
	fail "-r --no-follow on a link: status $rc, want 1; stderr: $(cat "$tmp/e")"
note "--no-follow: done"

# ---- --xdev -----------------------------------------------------------------------------------
d=$tmp/xdev
mkdir -p "$d/mnt"
if [ -n "${NX_TOOL_OPTIONS_NS:-}" ] && mount -t tmpfs -o size=1m nxtest "$d/mnt" 2>/dev/null; then
	for x in "" --xdev; do
		# shellcheck disable=SC2086
		if start_watch "$tmp/xdev.out" "$d" -r -e create --format=%r $x; then
			: >"$d/mnt/inside"
			sleep 0.2
			: >"$d/outside"
			wait_match "$tmp/xdev.out" '^outside$' || fail "xdev $x: the last event never came"
			# a scan of the mount would be done by now
			if [ $scanning -eq 1 ]; then sleep 1.5; fi
			stop
			if [ -n "$x" ]; then
				grep -q '^mnt/inside$' "$tmp/xdev.out" && fail "--xdev: a change in a mount was reported"
			else
				grep -q '^mnt/inside$' "$tmp/xdev.out" || fail "without --xdev: mnt/inside not reported: $(cat "$tmp/xdev.out")"
			fi
		fi
		rm -f "$d/mnt/inside" "$d/outside"
	done
	umount "$d/mnt"
	note "--xdev: done"
else
	note "--xdev: not checked (needs root and a mount namespace)"
fi

# ---- run ----------------------------------------------------------------------------------------
if ! "$NX" run --help >/dev/null 2>&1; then
	note "notifyx was built without libev: run is not checked"
	finish
fi

# Each run writes "RUN <argument>", NOTIFYX_EVENTS, "DROPPED=<n>", "END".
d=$tmp/run
mkdir "$d"
# shellcheck disable=SC2016
cmd='printf "RUN %s\n%s\nDROPPED=%s\nEND\n" "$2" "$NOTIFYX_EVENTS" "$NOTIFYX_DROPPED" >>"$1"'
"$NX" run -b "$backend" -d 300 -p --ext c "$d" -- sh -c "$cmd" sh "$tmp/run.log" /_ \
	2>"$tmp/run.err" &
pid=$!
sleep 1
: >"$d/not-this.txt"
sleep 1
[ "$(lines "$tmp/run.log")" -eq 0 ] || fail "run -p --ext c: ran at start or for a .txt: $(cat "$tmp/run.log")"
# written until it runs: on a loaded machine, the watch may not be in place yet
k=0
while [ "$(lines "$tmp/run.log")" -lt 4 ] && [ $k -lt 100 ]; do
	echo $k >>"$d/a.c"
	sleep 0.3
	k=$((k + 1))
done
[ "$(lines "$tmp/run.log")" -ge 4 ] || fail "run: no run for a.c"
sleep 1.5 # the writes that came after the first run started give one more
runs=$(grep -c '^END$' "$tmp/run.log")
mv "$d/a.c" "$d/b.c"
: >"$d/$(printf 'new\nline.c')"
k=0
while [ "$(grep -c '^END$' "$tmp/run.log")" -le "$runs" ] && [ $k -lt 300 ]; do
	sleep 0.1
	k=$((k + 1))
done
[ $k -lt 300 ] || fail "run: no run for the rename"
kill -TERM "$pid"
reap 150 "run did not end after SIGTERM"
python3 - "$tmp/run.log" "$d" "$scanning" <<'PY' || fail "run: NOTIFYX_EVENTS and /_ (log in $tmp/run.log)"
import sys
log, d, scanning = sys.argv[1], sys.argv[2], sys.argv[3] == '1'
runs = open(log).read().split('END\n')[:-1]
if len(runs) < 2:
    sys.exit('%d runs, want 2: %r' % (len(runs), runs))
def parse(r):
    lines = r.split('\n')
    arg = lines[0][len('RUN '):]
    ev = {}
    for l in lines[1:-2]:
        events, path = l.split(' ', 1)
        ev[path] = set(events.split(','))
    return arg, ev, lines[-2]
arg, ev, dropped = parse(runs[0])
if arg != d + '/a.c' or set(ev) != {d + '/a.c'} or dropped != 'DROPPED=0':
    sys.exit('first run: %r %r %r' % (arg, ev, dropped))
for r in runs[1:-1]: # more writes to a.c
    if set(parse(r)[1]) != {d + '/a.c'}:
        sys.exit('run between: %r' % r)
arg, ev, dropped = parse(runs[-1])
nl = d + '/new\\nline.c'
if set(ev) != {d + '/a.c', d + '/b.c', nl} or dropped != 'DROPPED=0':
    sys.exit('second run: %r %r' % (ev, dropped))
if 'rename' not in ev[d + '/b.c'] or 'rename' not in ev[d + '/a.c']:
    sys.exit('second run: no rename: %r' % ev)
if arg not in (d + '/b.c', d + '/a.c', d + '/new\nline.c'):
    sys.exit('second run: /_ is %r' % arg)
PY
note "run: --postpone, --ext, /_, NOTIFYX_EVENTS: done"

# --signal HUP with --restart: the command traps HUP, which TERM would not run.
# notifyx and so the command start with SIGHUP at its default action: one
# ignored where this test runs (nohup, a job started with SIGHUP ignored) is
# inherited through notifyx (which leaves ignored signals ignored, as exec
# does), and a non-interactive shell cannot trap a signal ignored when it
# started: the command would ignore HUP, and each stop would wait for SIGKILL
# (log "start start": no restart in time, no "hup").
# shellcheck disable=SC2016
cmd='trap "echo hup >>\"\$1\"; exit 0" HUP; echo start >>"$1"; while :; do sleep 0.1; done'
python3 -c 'import os, signal, sys
signal.signal(signal.SIGHUP, signal.SIG_DFL)
os.execvp(sys.argv[1], sys.argv[1:])' \
	"$NX" run -b "$backend" -d 50 --restart --signal SIGHUP "$d" -- sh -c "$cmd" sh "$tmp/sig.log" \
	2>"$tmp/sig.err" &
pid=$!
wait_lines "$tmp/sig.log" 1 || fail "signal: the first run never started"
: >"$d/change"
wait_lines "$tmp/sig.log" 3 || fail "signal: no restart: $(cat "$tmp/sig.log")"
kill -TERM "$pid"
reap 150 "run --signal did not end after SIGTERM"
[ "$(head -n 3 "$tmp/sig.log" | tr '\n' ' ')" = "start hup start " ] ||
	fail "--signal HUP: log $(tr '\n' ' ' <"$tmp/sig.log"), want: start hup start"
for s in nosuch 0 99999 SIG ""; do
	usage_error run --signal "$s" "$d" -- true
done
note "run --signal: done"

# --clear: the screen is cleared before each run; at the run at start, /_ is
# the first PATH and NOTIFYX_PATHS is empty.
# shellcheck disable=SC2016
"$NX" run -b "$backend" -d 50 --clear "$d" -- sh -c 'echo "$1 [$NOTIFYX_PATHS]"' sh /_ \
	>"$tmp/clear.out" 2>"$tmp/clear.err" &
pid=$!
wait_lines "$tmp/clear.out" 1 || fail "clear: the first run never came"
: >"$d/change2"
wait_lines "$tmp/clear.out" 2 || fail "clear: no second run"
kill -TERM "$pid"
reap 150 "run --clear did not end after SIGTERM"
python3 - "$tmp/clear.out" "$d" <<'PY' || fail "--clear"
import sys
out = open(sys.argv[1], 'rb').read()
d = sys.argv[2].encode()
c = b'\x1b[H\x1b[2J'
if out != c + d + b' []\n' + c + d + b'/change2 [' + d + b'/change2]\n':
    sys.exit('--clear: output %r' % out)
PY
note "run --clear: done"

finish
