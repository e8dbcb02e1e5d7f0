#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# notifyx run as a user runs it, on one backend (argument 1, else
# $NOTIFYX_TEST_BACKEND, else inotify):
#  - usage errors exit 2, a PATH that cannot be watched 1;
#  - a burst of changes gives one run; changes during a run give one more;
#  - --restart stops the running command's whole process group (a process
#    that ignores SIGTERM included, by SIGKILL) and starts it again, and
#    SIGTERM to notifyx leaves no process of any group behind;
#  - the watched directory removed: notifyx stops the command and exits 1.
# Exit: 0 pass, 1 fail, 77 skip (with the reason).

set -u

backend=${1:-${NOTIFYX_TEST_BACKEND:-inotify}}
lib=$(dirname "$0")/tool-lib.sh
# shellcheck source=SCRIPTDIR/tool-lib.sh
. "$lib"
"$NX" run --help >/dev/null 2>&1 || skip "notifyx was built without libev: no run command"
need_backend
need ps "ps is needed to look for orphans"

# gone PID: no such process, not even a zombie.
gone() { [ ! -d "/proc/$1" ]; }

# group_gone PGID: no process in that process group.
group_gone() { ! ps -eo pgid= | grep -qx " *$1"; }

# stop_nx: SIGTERM to notifyx; sets rc.
stop_nx() {
	kill -TERM "$pid"
	reap 150 "notifyx run did not end after SIGTERM"
}

# ---- usage --------------------------------------------------------------------------
d=$tmp/w
mkdir "$d"
for args in "run" "run $d" "run $d --" "run -- true" "run -d x $d -- true" \
	    "run -d -5 $d -- true" "run --nosuch $d -- true" "run -b nosuch $d -- true"; do
	# shellcheck disable=SC2086
	usage_error $args
done
"$NX" run "$tmp/missing" -- true >/dev/null 2>"$tmp/e"
rc=$?
[ $rc -eq 1 ] || fail "run on a missing path: status $rc, want 1"
grep -qx "notifyx: $tmp/missing: No such file or directory" "$tmp/e" ||
	fail "run on a missing path: stderr: $(cat "$tmp/e")"

# ---- a burst gives one run; a change during a run gives one more ------------------------
# The command writes outside the watched directory.  The debounce time is
# long enough for the burst to stay one even on a busy machine.
"$NX" run -b "$backend" -d 1000 "$d" -- sh -c 'echo run >>"$1"' sh "$tmp/burst.log" \
	2>"$tmp/burst.err" &
pid=$!
wait_lines "$tmp/burst.log" 1 || fail "burst: the first run (at start) never came"
for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
	echo "$i" >"$d/f$i"
done
wait_lines "$tmp/burst.log" 2 || fail "burst: no run after the burst"
sleep 2.5 # a second run for the same burst would have come by now
[ "$(lines "$tmp/burst.log")" -eq 2 ] ||
	fail "burst: $(lines "$tmp/burst.log") runs, want 2 (one at start, one for the burst)"
stop_nx
[ $rc -eq 0 ] || fail "burst: status $rc after SIGTERM, want 0"
[ -s "$tmp/burst.err" ] && fail "burst: stderr: $(cat "$tmp/burst.err")"

"$NX" run -b "$backend" -d 50 "$d" -- \
	sh -c 'echo start >>"$1"; sleep 2; echo end >>"$1"' sh "$tmp/busy.log" 2>"$tmp/busy.err" &
pid=$!
wait_lines "$tmp/busy.log" 1 || fail "busy: the first run never started"
: >"$d/during.1"
sleep 0.2
: >"$d/during.2"
wait_lines "$tmp/busy.log" 4 || fail "busy: no second run"
sleep 2.5
[ "$(tr '\n' ' ' <"$tmp/busy.log")" = "start end start end " ] ||
	fail "busy: runs $(tr '\n' ' ' <"$tmp/busy.log"), want: start end start end"
stop_nx
[ $rc -eq 0 ] || fail "busy: status $rc after SIGTERM, want 0"
note "burst and busy: done"

# ---- --restart: the whole group goes, nothing is orphaned --------------------------------
# Each run writes down its shell (the group leader), a background sleep, a
# sleep that ignores SIGTERM (only SIGKILL ends it), and then waits.
cmd='echo $$ >>"$1"; sleep 300 & echo $! >>"$1"; (trap "" TERM; exec sleep 301) & echo $! >>"$1"; wait'
"$NX" run -b "$backend" -d 50 --restart "$d" -- sh -c "$cmd" sh "$tmp/restart.pids" \
	2>"$tmp/restart.err" &
pid=$!
wait_lines "$tmp/restart.pids" 3 || fail "restart: the first run never started"
first=$(head -n 3 "$tmp/restart.pids")
leader=$(head -n 1 "$tmp/restart.pids")
: >"$d/change"
# SIGTERM, then SIGKILL 5 s later for the sleep that ignores SIGTERM
wait_lines "$tmp/restart.pids" 6 || fail "restart: no second run"
for p in $first; do
	gone "$p" || fail "restart: process $p of the first run is still there: $(ps -o pid,pgid,ppid,stat,cmd -p "$p")"
done
group_gone "$leader" || fail "restart: the first run's process group $leader is still there"
kill -0 "$pid" 2>/dev/null || fail "restart: notifyx ended"
second=$(sed -n '4,6p' "$tmp/restart.pids")
leader2=$(sed -n '4p' "$tmp/restart.pids")
for p in $second; do
	kill -0 "$p" 2>/dev/null || fail "restart: process $p of the second run is not running"
done
stop_nx
[ $rc -eq 0 ] || fail "restart: status $rc after SIGTERM, want 0"
for p in $second; do
	gone "$p" || fail "restart: process $p is still there after notifyx ended"
done
group_gone "$leader2" || fail "restart: process group $leader2 is still there after notifyx ended"
[ -s "$tmp/restart.err" ] && fail "restart: stderr: $(cat "$tmp/restart.err")"
note "restart: done"

# An orphan: the command ends at once, leaving a sleep in its group; notifyx,
# a subreaper, becomes its parent, and the next run first ends it.
"$NX" run -b "$backend" -d 50 --restart "$d" -- \
	sh -c 'sleep 302 & echo $! >>"$1"' sh "$tmp/orphan.pids" 2>"$tmp/orphan.err" &
pid=$!
wait_lines "$tmp/orphan.pids" 1 || fail "orphan: the first run never started"
o=$(head -n 1 "$tmp/orphan.pids")
sleep 0.3
ppid=$(ps -o ppid= -p "$o" | tr -d ' ')
# (the libtool wrapper script execs notifyx: the same pid)
[ "$ppid" = "$pid" ] || fail "orphan: its parent is $ppid, not notifyx ($pid), the subreaper"
: >"$d/change2"
wait_lines "$tmp/orphan.pids" 2 || fail "orphan: no second run"
gone "$o" || fail "orphan: the first run's sleep $o is still there"
stop_nx
[ $rc -eq 0 ] || fail "orphan: status $rc after SIGTERM, want 0"
o2=$(sed -n 2p "$tmp/orphan.pids")
gone "$o2" || fail "orphan: the second run's sleep $o2 is still there after notifyx ended"
note "orphan: done"

# ---- the watched directory goes: exit 1, command stopped ------------------------------------
g=$tmp/goes
mkdir "$g"
"$NX" run -b "$backend" -d 50 "$g" -- sh -c 'echo $$ >>"$1"; exec sleep 303' sh "$tmp/goes.pids" \
	2>"$tmp/goes.err" &
pid=$!
wait_lines "$tmp/goes.pids" 1 || fail "goes: the first run never started"
rmdir "$g"
reap 150 "goes: notifyx run did not end when its directory was removed"
[ $rc -eq 1 ] || fail "goes: status $rc, want 1"
grep -q 'every watched PATH is gone' "$tmp/goes.err" || fail "goes: stderr: $(cat "$tmp/goes.err")"
gone "$(head -n 1 "$tmp/goes.pids")" || fail "goes: the command is still running"
note "watched directory removed: done"

# ---- a command that does not exist: said once per run, notifyx goes on ---------------------
"$NX" run -b "$backend" "$d" -- "$tmp/no-such-command" 2>"$tmp/nocmd.err" &
pid=$!
k=0
while [ ! -s "$tmp/nocmd.err" ] && [ $k -lt 100 ]; do
	sleep 0.1
	k=$((k + 1))
done
grep -qx "notifyx: $tmp/no-such-command: No such file or directory" "$tmp/nocmd.err" ||
	fail "no command: stderr: $(cat "$tmp/nocmd.err")"
kill -0 "$pid" 2>/dev/null || fail "no command: notifyx ended"
stop_nx
[ $rc -eq 0 ] || fail "no command: status $rc after SIGTERM, want 0"

finish
