#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# notifyx watch as scripts use it, on one backend (argument 1, else
# $NOTIFYX_TEST_BACKEND, else inotify):
#  - the exit status of -1, -n N and -t SECONDS (0 reached, 3 timed out);
#  - --format=nul and --format=TEMPLATE with names holding newlines, quotes,
#    backslashes, tabs and invalid UTF-8, decoded back to the exact bytes;
#  - `notifyx watch ... | while read` sees each line while notifyx still runs;
#  - progress of a recursive setup on stderr only when stderr is a terminal;
#  - (inotify) the ENOSPC message names fs.inotify.max_user_watches.
# Exit: 0 pass, 1 fail, 77 skip (with the reason).

set -u

backend=${1:-${NOTIFYX_TEST_BACKEND:-inotify}}
lib=$(dirname "$0")/tool-lib.sh
# shellcheck source=SCRIPTDIR/tool-lib.sh
. "$lib"
need python3 "python3 is needed to check the output"
need_backend

# The scanning backends see a change at their next scan (1 s by default).
case $backend in
dnotify|poll) T=4 ;;
*) T=2 ;;
esac

# poke_until_exit DIR: creates probe files in DIR every 0.1 s until $pid
# ends (30 s at most); then rc is its exit status.
pk=0 # probe numbers go on from call to call: each probe is a new file
poke_until_exit() {
	k=0
	while kill -0 "$pid" 2>/dev/null && [ $k -lt 300 ]; do
		: >"$1/probe.$pk"
		sleep 0.1
		k=$((k + 1))
		pk=$((pk + 1))
	done
	reap 0 "notifyx (pid $pid) did not end; killing it"
}

stop() {
	kill -TERM "$pid" 2>/dev/null
	wait "$pid"
	rc=$?
	pid=
	[ $rc -eq 0 ] || fail "notifyx watch ended by SIGTERM: status $rc, want 0"
}

# ---- -1, -n, -t ---------------------------------------------------------------
d=$tmp/count
mkdir "$d"
"$NX" watch -b "$backend" -e create -1 "$d" >"$tmp/one.out" 2>"$tmp/one.err" &
pid=$!
poke_until_exit "$d"
[ $rc -eq 0 ] || fail "-1: status $rc, want 0; stderr: $(cat "$tmp/one.err")"
[ "$(wc -l <"$tmp/one.out")" -eq 1 ] || fail "-1: $(wc -l <"$tmp/one.out") lines, want 1"
grep -Eq '^create( synthetic)? "[^"]*/probe\.[0-9]+"$' "$tmp/one.out" ||
	fail "-1: printed $(cat "$tmp/one.out")"

"$NX" watch -b "$backend" -e create,delete --count 3 "$d" >"$tmp/three.out" 2>"$tmp/three.err" &
pid=$!
poke_until_exit "$d"
[ $rc -eq 0 ] || fail "-n 3: status $rc, want 0; stderr: $(cat "$tmp/three.err")"
[ "$(wc -l <"$tmp/three.out")" -eq 3 ] || fail "-n 3: $(wc -l <"$tmp/three.out") lines, want 3"

"$NX" watch -b "$backend" -t 0.5 "$d" >"$tmp/quiet.out" 2>&1
rc=$?
[ $rc -eq 3 ] || fail "-t 0.5 on a quiet directory: status $rc, want 3"
[ -s "$tmp/quiet.out" ] && fail "-t 0.5 on a quiet directory printed: $(cat "$tmp/quiet.out")"

"$NX" watch -b "$backend" -e create --timeout "$T" "$d" >"$tmp/t.out" 2>"$tmp/t.err" &
pid=$!
poke_until_exit "$d"
[ $rc -eq 0 ] || fail "-t $T with events: status $rc, want 0; stderr: $(cat "$tmp/t.err")"
[ -s "$tmp/t.out" ] || fail "-t $T with events: nothing printed"

"$NX" watch -b "$backend" -e create -n 100000 -t "$T" "$d" >"$tmp/nt.out" 2>"$tmp/nt.err" &
pid=$!
poke_until_exit "$d"
[ $rc -eq 3 ] || fail "-n 100000 -t $T: status $rc, want 3; stderr: $(cat "$tmp/nt.err")"
[ -s "$tmp/nt.out" ] || fail "-n 100000 -t $T: nothing printed"

for args in "-n 0" "-n x" "-n -1" "-t 0" "-t x" "-t -1" "--format=%q" "--format=%"; do
	# shellcheck disable=SC2086
	usage_error watch $args "$d"
done
note "-1, -n, -t: done"

# ---- names in nul and template formats --------------------------------------
nl='
'
tab=$(printf '\t')
set -- plain "new${nl}line" 'quo"te' 'back\slash' "tab${tab}here" \
	"$(printf 'bad\377\376utf8')" "$(printf 'ctl\001\033[31mred')" \
	"$(printf 'caf\303\251')" 'per%cent %p' "lead${nl}" 'trail\'
printf '%s\0' "$@" >"$tmp/names"

d=$tmp/nul
mkdir "$d"
if start_watch "$tmp/nul.out" "$d" -b "$backend" -e create --format=nul; then
	for n in "$@"; do
		: >"$d/$n"
	done
	: >"$d/done"
	wait_match "$tmp/nul.out" '/done\x00' || fail "nul: the last event never came"
	stop
	python3 - "$tmp/nul.out" "$d" "$tmp/names" "$backend" <<'PY' || fail "nul output (in $tmp/nul.out)"
import os, sys
got = open(sys.argv[1], 'rb').read()
if not got.endswith(b'\0'):
    sys.exit('nul: output does not end with a NUL')
root = os.fsencode(sys.argv[2])
items = [p for p in got.split(b'\0')[:-1] if b'/ready.' not in p]
want = [root + b'/' + n for n in open(sys.argv[3], 'rb').read().split(b'\0')[:-1]]
want.append(root + b'/done')
if sys.argv[4] in ('dnotify', 'poll'):
    # a scan reports the entries it finds in no particular order
    items, want = sorted(items), sorted(want)
if items != want:
    sys.exit('nul:\n  got  %r\n  want %r' % (items, want))
PY
fi

# The template: tab-separated fields (an escaped name never holds a raw tab).
d=$tmp/template
mkdir "$d"
fmt="%e${tab}%r${tab}%o${tab}%p${tab}%w${tab}%f${tab}%c${tab}%t${tab}100%%"
if start_watch "$tmp/tpl.out" "$d" -b "$backend" -e create,rename --format="$fmt"; then
	for n in "$@"; do
		: >"$d/$n"
		mv "$d/$n" "$d/$n.r"
	done
	mkdir "$d/dir"
	: >"$d/done"
	wait_match "$tmp/tpl.out" '/done\t' || fail "template: the last event never came"
	stop
	python3 - "$tmp/tpl.out" "$d" "$tmp/names" "$backend" <<'PY' || fail "template output (in $tmp/tpl.out)"
import os, re, sys, time
from nxdecode import cdecode

root = os.fsencode(sys.argv[2])
scanning = sys.argv[4] in ('dnotify', 'poll')
data = open(sys.argv[1], 'rb').read()
if not data.endswith(b'\n'):
    sys.exit('template: last line not finished')
got = []
for line in data.split(b'\n')[:-1]:
    f = line.split(b'\t')
    if len(f) != 9:
        sys.exit('template: %d fields in %r' % (len(f), line))
    ev, rel, old, full, w, flags, cookie, t, pct = f
    if pct != b'100%':
        sys.exit('template: %%%% gave %r' % pct)
    if not re.fullmatch(rb'[0-9]+\.[0-9]{6}', t) or abs(float(t) - time.time()) > 3600:
        sys.exit('template: %%t gave %r' % t)
    if not re.fullmatch(rb'[0-9]+', cookie):
        sys.exit('template: %%c gave %r' % cookie)
    rel, old, full, w = cdecode(rel), cdecode(old), cdecode(full), cdecode(w)
    if w != root or full != root + b'/' + rel:
        sys.exit('template: %%w %r / %%p %r for %%r %r' % (w, full, rel))
    if b'ready.' in rel:
        continue
    fl = set(flags.split(b',')) - {b''}
    if scanning:
        fl.discard(b'synthetic')
    got.append((ev, rel, old, fl))
want = []
for n in open(sys.argv[3], 'rb').read().split(b'\0')[:-1]:
    want.append((b'create', n, b'', set()))
    want.append((b'rename', n + b'.r', root + b'/' + n, set()))
want.append((b'create', b'dir', b'', {b'isdir'}))
want.append((b'create', b'done', b'', set()))
if scanning:
    # A scan sees states: a file may be seen before its rename (create, then
    # rename) or only after it (one create of the final name), and entries
    # found by one scan come in no particular order.  Replay the events: each
    # must fit the names known so far, and they must end at the final state.
    final = {(w[1], frozenset(w[3])) for w in want
             if w[0] == b'rename' or w[1] in (b'dir', b'done')}
    names = {}
    for ev, rel, old, fl in got:
        if ev == b'create' and rel not in names:
            names[rel] = frozenset(fl)
        elif ev == b'rename' and old.startswith(root + b'/') and old[len(root) + 1:] in names:
            names[rel] = names.pop(old[len(root) + 1:])
        else:
            sys.exit('template: %r does not fit the names seen before it: %r' %
                     ((ev, rel, old, fl), sorted(names)))
    if set(names.items()) != final:
        sys.exit('template: the events end at\n  %r\nnot at\n  %r' %
                 (sorted(names.items()), sorted(final)))
    got = want
if got != want:
    for i, (g, x) in enumerate(zip(got, want)):
        if g != x:
            print('template line %d:\n  got  %r\n  want %r' % (i + 1, g, x))
            break
    sys.exit('template: %d events, want %d' % (len(got), len(want)))
PY
fi
note "nul and template formats: done"

# ---- a pipe reader sees each line live ----------------------------------------------
d=$tmp/live
mkdir "$d"
# A FIFO is a pipe whose ends have names: notifyx writes into it as into
# `notifyx watch ... | while read`, and its pid is known.
mkfifo "$tmp/fifo"
(
	while read -r line; do
		echo "$line" >>"$tmp/live.got"
	done <"$tmp/fifo"
) &
reader=$!
"$NX" watch -b "$backend" -e create --format=%r "$d" >"$tmp/fifo" 2>"$tmp/live.err" &
pid=$!
k=0
live_ok=0
while [ $k -lt 100 ]; do
	: >"$d/first.$k"
	if [ -s "$tmp/live.got" ]; then
		live_ok=1
		break
	fi
	sleep 0.1
	k=$((k + 1))
done
if [ $live_ok -eq 1 ]; then
	: >"$d/second"
	wait_match "$tmp/live.got" '^second$' ||
		fail "live: the line of a second file never reached the reader"
	kill -0 "$pid" 2>/dev/null || fail "live: notifyx is not running any more"
else
	fail "live: no line reached 'while read' while notifyx ran"
fi
stop
wait "$reader"
note "live pipe: done"

# ---- progress of a recursive setup ---------------------------------------------------
d=$tmp/tree
mkdir "$d"
python3 -c 'import os, sys
for i in range(30):
    for j in range(10):
        os.makedirs(os.path.join(sys.argv[1], "d%d" % i, "e%d" % j))' "$d"
# not a terminal: nothing on stderr
"$NX" watch -b "$backend" -r -t 0.3 "$d" >/dev/null 2>"$tmp/prog.err"
[ -s "$tmp/prog.err" ] && fail "progress: stderr not a terminal, yet it printed: $(cat "$tmp/prog.err")"
# a terminal: the progress line ends with what is watched
python3 - "$NX" "$backend" "$d" "$tmp/prog.out" <<'PY' || fail "progress on a terminal"
import os, pty, re, select, signal, sys, time
nx, backend, d, out = sys.argv[1:5]
pid, master = pty.fork()
if pid == 0:
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.execv(nx, [nx, 'watch', '-b', backend, '-r', '-t', '1', d])
seen = b''
end = time.time() + 30
while time.time() < end:
    r, _, _ = select.select([master], [], [], 0.5)
    if r:
        try:
            b = os.read(master, 4096)
        except OSError:
            break
        if not b:
            break
        seen += b
_, status = os.waitpid(pid, 0)
print('stderr on the terminal: %r' % seen)
if os.waitstatus_to_exitcode(status) != 3:
    sys.exit('progress: status %r, want 3 (timeout)' % os.waitstatus_to_exitcode(status))
want = rb'notifyx: watching ' + re.escape(os.fsencode(d)) + rb': '
if backend == 'inotify':
    want += rb'33[12] directories, '   # the root, 330 below it, and the guard on the root's parent
elif backend == 'fanotify':
    want += rb'[0-9]+ directories, '   # marks: maybe one more than directories
if not re.search(want + rb'[0-9.]+ s\x1b\[K\r?\n', seen):
    sys.exit('progress: no final line %r' % want)
if os.path.getsize(out):
    sys.exit('progress: standard output got %r' % open(out, 'rb').read())
PY
note "progress: done"

# ---- the ENOSPC message ----------------------------------------------------------------
if [ "$backend" = inotify ]; then
	# A user namespace has its own watch limit (/proc/sys/user/): lowering it
	# there leaves the machine's limit alone.
	if unshare --user --map-root-user true 2>/dev/null; then
		unshare --user --map-root-user sh -c \
			'echo 20 >/proc/sys/user/max_inotify_watches && exec "$1" watch -r -t 0.1 "$2"' \
			sh "$NX" "$d" >/dev/null 2>"$tmp/enospc.err"
		rc=$?
		[ $rc -eq 1 ] || fail "ENOSPC: status $rc, want 1"
		grep -qx "notifyx: $d: No space left on device" "$tmp/enospc.err" &&
			grep -q 'fs\.inotify\.max_user_watches' "$tmp/enospc.err" ||
			fail "ENOSPC: stderr: $(cat "$tmp/enospc.err")"
		note "ENOSPC message: done"
	else
		note "no user namespaces here: the ENOSPC message is not checked"
	fi
fi

finish
