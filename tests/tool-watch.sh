#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# notifyx(1) run as a user runs it: usage errors, `notifyx backends`, and
# `notifyx watch` in text and JSON on a directory where files with nasty names
# (newline, quote, backslash, tab, control bytes, invalid UTF-8) are created,
# renamed and deleted.  The output is decoded by an independent Python
# decoder of the documented formats and compared with the real names.
#
# Exit: 0 pass, 1 fail, 77 skip (with the reason).  Works from a VPATH build:
# the tool is $top_builddir/tools/notifyx (maybe a libtool wrapper script).

set -u

lib=$(dirname "$0")/tool-lib.sh
# shellcheck source=SCRIPTDIR/tool-lib.sh
. "$lib"
need python3 "python3 is needed to check the output"

# wait_exit: waits (5 s at most) for $pid to end; sets rc.
wait_exit() { reap 50 "notifyx watch (pid $pid) did not end; killing it"; }

# A background job of a non-interactive shell starts with SIGINT ignored;
# launch=sigint_default makes start_watch start notifyx with SIGINT at its
# default instead.
sigint_default() {
	exec python3 -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.execvp(sys.argv[1], sys.argv[1:])' "$@"
}

# sigint_ignored PID: true when PID ignores SIGINT (bit 2 of SigIgn).
sigint_ignored() {
	python3 -c 'import sys
for l in open("/proc/%s/status" % sys.argv[1]):
    if l.startswith("SigIgn:"):
        sys.exit(0 if int(l.split()[1], 16) & 2 else 1)
sys.exit(1)' "$1"
}

# ---- the decoder and checker (an independent reading of the formats) -------
cat >"$tmp/check.py" <<'PY'
import base64, json, os, re, sys, time
from nxdecode import cdecode

Q = rb'"((?:[^"\\]|\\.)*)"'
TEXT = re.compile(rb'^([a-z_]+|0x[0-9a-f]{8})((?: [a-z_]+(?:=[0-9a-fx]+)?)*) ' + Q +
                  rb'(?: from ' + Q + rb')?(?:: (.*))?$')

def parse_text(path):
    events = []
    with open(path, 'rb') as f:
        data = f.read()
    if data and not data.endswith(b'\n'):
        raise ValueError('last line is not finished')
    for line in data.split(b'\n')[:-1]:
        m = TEXT.match(line)
        if not m:
            raise ValueError('text line does not parse: %r' % line)
        flags = {f.decode() for f in m.group(2).split()}
        events.append((m.group(1).decode(), flags, cdecode(m.group(3)),
                       cdecode(m.group(4)) if m.group(4) is not None else None,
                       m.group(5)))
    return events

KEYS = {'time', 'wd', 'root', 'path', 'old_path', 'event', 'isdir', 'synthetic',
        'exchange', 'cookie', 'error', 'error_text'}

def name(o, key):
    """The exact bytes of a name: key_b64 when present, else the UTF-8 string."""
    if o[key] is None:
        return None
    if key + '_b64' in o:
        return base64.b64decode(o[key + '_b64'], validate=True)
    return o[key].encode('utf-8')

def no_constant(c):
    raise ValueError('not JSON: %s' % c)

def no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError('a key twice in %r' % keys)
    return dict(pairs)

def parse_json(path):
    events = []
    with open(path, 'rb') as f:
        data = f.read()
    for line in data.split(b'\n')[:-1]:
        # strict: raw control chars refused (json's default), and neither
        # NaN/Infinity nor a key twice, which RFC 8259 parsers need not accept
        o = json.loads(line.decode('utf-8'), parse_constant=no_constant,
                       object_pairs_hook=no_duplicates)
        extra = set(o) - KEYS - {'root_b64', 'path_b64', 'old_path_b64'}
        if extra or KEYS - set(o):
            raise ValueError('keys %r in %r' % (sorted(o), line))
        for k in ('isdir', 'synthetic', 'exchange'):
            if not isinstance(o[k], bool):
                raise ValueError('%s is not a boolean: %r' % (k, line))
        if not isinstance(o['time'], float) or abs(o['time'] - time.time()) > 3600:
            raise ValueError('time: %r' % line)
        if not isinstance(o['wd'], int) or o['wd'] < 1:
            raise ValueError('wd: %r' % line)
        for k in ('root', 'path', 'old_path'):
            if k + '_b64' in o and o[k].encode('utf-8') == base64.b64decode(o[k + '_b64']):
                raise ValueError('%s_b64 for a valid UTF-8 name: %r' % (k, line))
        flags = {k for k in ('isdir', 'synthetic', 'exchange') if o[k]}
        events.append((o['event'], flags, name(o, 'root'), name(o, 'path'),
                       name(o, 'old_path'), o))
    return events

def names(path):
    with open(path, 'rb') as f:
        return f.read().split(b'\0')[:-1]

def probe(p):
    return re.search(rb'(^|/)ready\.[0-9]+$', p) is not None

def expect_eq(what, got, want):
    if got != want:
        print('FAIL: %s:\n  got  %r\n  want %r' % (what, got, want))
        return 1
    return 0

def check_text(out, root, namefile):
    root = os.fsencode(root)
    bad = 0
    evs = [e for e in parse_text(out) if not probe(e[2])]
    want = []
    for n in names(namefile):
        want.append(('create', set(), root + b'/' + n, None, None))
        want.append(('rename', set(), root + b'/' + n + b'.r', root + b'/' + n, None))
        want.append(('delete', set(), root + b'/' + n + b'.r', None, None))
    d = root + b'/dir\nx'
    want += [('create', {'isdir'}, d, None, None), ('delete', {'isdir'}, d, None, None),
             ('create', set(), root + b'/done', None, None)]
    bad += expect_eq('number of text lines', len(evs), len(want))
    for i, (g, w) in enumerate(zip(evs, want)):
        bad += expect_eq('text line %d' % (i + 1), g, w)
    return bad

def check_json(out, root, namefile):
    root = os.fsencode(root)
    bad = 0
    evs = [e[:5] for e in parse_json(out) if not probe(e[3])]
    want = []
    for n in names(namefile):
        want.append(('create', set(), root, n, None))
        want.append(('rename', set(), root, n + b'.r', n))
        want.append(('delete', set(), root, n + b'.r', None))
    sub = b'sub\n\xff dir'
    want += [('create', {'isdir'}, root, sub, None),
             ('create', set(), root, sub + b'/in\\"ner', None),
             ('delete', set(), root, sub + b'/in\\"ner', None),
             ('delete', {'isdir'}, root, sub, None),
             ('ignored', set(), root, b'', None)]
    # an entry made in a new directory may be found by the library (synthetic)
    evs = [(e[0], e[1] - {'synthetic'}, e[2], e[3], e[4]) if e[3] == sub + b'/in\\"ner' else e
           for e in evs]
    bad += expect_eq('number of JSON lines', len(evs), len(want))
    for i, (g, w) in enumerate(zip(evs, want)):
        bad += expect_eq('JSON line %d' % (i + 1), g, w)
    return bad

mode = sys.argv[1]
try:
    if mode == 'text':
        sys.exit(1 if check_text(sys.argv[2], sys.argv[3], sys.argv[4]) else 0)
    elif mode == 'json':
        sys.exit(1 if check_json(sys.argv[2], sys.argv[3], sys.argv[4]) else 0)
    elif mode == 'textany':   # every line parses; print the decoded events
        for e in parse_text(sys.argv[2]):
            print(e)
except ValueError as e:
    print('FAIL: %s' % e)
    sys.exit(1)
PY

# ---- usage ------------------------------------------------------------------
"$NX" --version >"$tmp/v" 2>&1 || fail "notifyx --version: status $?"
grep -Eq '^notifyx \(libnotifyx\) [0-9]+\.[0-9]+\.[0-9]+$' "$tmp/v" ||
	fail "notifyx --version printed: $(cat "$tmp/v")"
"$NX" --help >"$tmp/h" 2>&1 || fail "notifyx --help: status $?"
grep -q '^Usage: notifyx COMMAND' "$tmp/h" || fail "notifyx --help: no usage line"
"$NX" watch --help >"$tmp/h" 2>&1 || fail "notifyx watch --help: status $?"
grep -q '^Usage: notifyx watch' "$tmp/h" || fail "notifyx watch --help: no usage line"
for args in "" "frobnicate" "watch" "watch -e nosuchevent $tmp" "watch -b nosuchbackend $tmp" \
	    "watch --format=xml $tmp" "watch --nosuchoption $tmp" "backends extra"; do
	# shellcheck disable=SC2086
	usage_error $args
done
"$NX" watch "$tmp/does-not-exist" >/dev/null 2>"$tmp/e"
rc=$?
[ $rc -eq 1 ] || fail "notifyx watch on a missing path: status $rc, want 1"
grep -qx "notifyx: $tmp/does-not-exist: No such file or directory" "$tmp/e" ||
	fail "notifyx watch on a missing path: stderr: $(cat "$tmp/e")"

# ---- backends -----------------------------------------------------------------
"$NX" backends >"$tmp/b" 2>"$tmp/e"
rc=$?
[ $rc -eq 0 ] || fail "notifyx backends: status $rc; $(cat "$tmp/e")"
cat "$tmp/b"
python3 - "$tmp/b" <<'PY' || fail "notifyx backends output"
import re, sys
events = ('access modify attrib close_write close_nowrite open create delete rename '
          'moved_out moved_in delete_self move_self').split()
lines = open(sys.argv[1]).read().splitlines()
names = [l.split(' ')[0] for l in lines]
if names != ['inotify', 'fanotify', 'dnotify', 'poll']:
    sys.exit('backends: names %r' % names)
for l in lines:
    m = re.match(r'^[a-z]+ (yes ([a-z_,]+)(; .+)?|no: .+)$', l)
    if not m:
        sys.exit('backends: line %r' % l)
    if m.group(2) and not set(m.group(2).split(',')) <= set(events):
        sys.exit('backends: unknown event in %r' % l)
PY

if grep -q '^inotify yes ' "$tmp/b"; then
	backend=inotify
else
	backend=
	note "inotify does not work here: the detailed watch tests are skipped"
fi

# ---- the nasty names ------------------------------------------------------------
nl='
'
tab=$(printf '\t')
cr=$(printf '\r')
set -- plain "new${nl}line" 'quo"te' 'back\slash' "tab${tab}here" \
	"$(printf 'bad\377\376utf8')" "$(printf 'ctl\001\033[31mred')" \
	"$(printf 'caf\303\251')" 'sp ace -> x' '\x41' "$(printf 'c1\302\233csi')" \
	'trail\' "cr${cr}x" "$(printf '\342\200\256bidi')" '"from "x"' "lead${nl}"
printf '%s\0' "$@" >"$tmp/names"

if [ -n "$backend" ]; then
	# -- text --
	d=$tmp/text
	mkdir "$d"
	launch=sigint_default
	if start_watch "$tmp/text.out" "$d" -b "$backend" -e create,delete,rename -x 'skip*'; then
		launch=
		: >"$d/skipme"
		for n in "$@"; do
			: >"$d/$n"
			mv "$d/$n" "$d/$n.r"
			rm "$d/$n.r"
		done
		mkdir "$d/dir${nl}x"
		rmdir "$d/dir${nl}x"
		: >"$d/done"
		wait_match "$tmp/text.out" '/done"$' || fail "text: the last event never came"
		kill -INT "$pid"
		wait_exit
		[ $rc -eq 0 ] || fail "text: notifyx watch ended by SIGINT: status $rc, want 0"
		python3 "$tmp/check.py" text "$tmp/text.out" "$d" "$tmp/names" ||
			fail "text output (in $tmp/text.out)"
		[ -s "$tmp/text.out.err" ] && fail "text: stderr: $(cat "$tmp/text.out.err")"
		note "text: $(wc -l <"$tmp/text.out") lines checked"
	fi

	# -- JSON, recursive, with a root that is not UTF-8; ends by itself --
	d=$tmp/$(printf 'json\377root')
	mkdir "$d"
	sub=$(printf 'sub\n\377 dir')
	if start_watch "$tmp/json.out" "$d" -b "$backend" -r -e create,delete,rename --format=json; then
		if sigint_ignored "$pid"; then
			# inherited as ignored: it stays so
			kill -INT "$pid"
			sleep 0.2
			kill -0 "$pid" 2>/dev/null || fail "json: an ignored SIGINT ended notifyx"
		fi
		for n in "$@"; do
			: >"$d/$n"
			mv "$d/$n" "$d/$n.r"
			rm "$d/$n.r"
		done
		mkdir "$d/$sub"
		sleep 0.2
		: >"$d/$sub/in\\\"ner"
		rm "$d/$sub/in\\\"ner"
		rmdir "$d/$sub"
		rmdir "$d"
		# every watch got ignored: notifyx exits 0 by itself
		wait_exit
		[ $rc -eq 0 ] || fail "json: notifyx watch whose root was removed: status $rc, want 0"
		python3 "$tmp/check.py" json "$tmp/json.out" "$d" "$tmp/names" ||
			fail "JSON output (in $tmp/json.out)"
		[ -s "$tmp/json.out.err" ] && fail "json: stderr: $(cat "$tmp/json.out.err")"
		note "json: $(wc -l <"$tmp/json.out") lines checked"
	fi
fi

# ---- a stream that never pauses: SIGTERM and SIGINT still end it with 0 -----------
# Its own output written inside the tree it watches: each line written is a
# MODIFY, printed in its turn, so events are always ready when the tool
# waits, and the wait (ppoll) never delivers the signals it unblocks.
if [ -n "$backend" ]; then
	for sig in TERM INT; do
		d=$tmp/loop-$sig
		mkdir "$d"
		[ $sig = INT ] && launch=sigint_default
		if start_watch "$d/out" "$d" -b "$backend" -e create,modify; then
			launch=
			sleep 0.5
			kill -$sig "$pid"
			wait_exit
			[ $rc -eq 0 ] || fail "loop: notifyx watch ended by SIG$sig: status $rc, want 0"
			note "loop: SIG$sig ended it after $(lines "$d/out") lines of its own output"
		fi
		launch=
		rm -rf "$d"
	done
fi

# ---- the poll backend (a scanning one): SIGTERM ends it with 0 ---------------------
d=$tmp/poll
mkdir "$d"
if ! grep -q '^poll yes ' "$tmp/b"; then
	note "the poll backend does not work here: its test is skipped"
elif start_watch "$tmp/poll.out" "$d" -b poll -e create; then
	: >"$d/$(printf 'p\nq')"
	wait_match "$tmp/poll.out" '^create synthetic "[^"]*/p\\nq"$' || fail "poll: no synthetic create event"
	kill -TERM "$pid"
	wait_exit
	[ $rc -eq 0 ] || fail "poll: notifyx watch ended by SIGTERM: status $rc, want 0"
	python3 "$tmp/check.py" textany "$tmp/poll.out" >/dev/null || fail "poll: output does not parse"
fi

finish
