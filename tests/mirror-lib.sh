# SPDX-License-Identifier: LGPL-2.1-or-later
#
# mirror-lib.sh: shell functions for driving examples/mirror and comparing its
# copy with the tree, sourced by tests/mirror-churn.sh and bench/soak.sh.
# The caller sets: mirror (the program), me (a name for messages) and
# backend; this file makes the work directory $work, removed at exit unless
# MIRROR_KEEP is set, and stops every mirror started with start().

work=$(mktemp -d "${TMPDIR:-/tmp}/notifyx-mirror.XXXXXX") || exit 1
pids=
cleanup() {
	for p in $pids; do
		kill -CONT "$p" 2>/dev/null
		kill -TERM "$p" 2>/dev/null
	done
	# A mirror stuck inside the library does not see SIGTERM.
	for p in $pids; do
		i=0
		while kill -0 "$p" 2>/dev/null && test $i -lt 20; do
			sleep 0.1
			i=$((i + 1))
		done
		kill -KILL "$p" 2>/dev/null
	done
	wait 2>/dev/null
	if test -n "${MIRROR_KEEP:-}"; then
		echo "$me: work directory kept: $work"
	else
		rm -rf "$work"
	fi
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

fail() {
	echo "FAIL: $me: $*"
	exit 1
}

# ---- the mirror process ------------------------------------------------------

# start NAME ARGS...: run the mirror as NAME (its output in $work/NAME.out,
# its event log in $work/NAME.log) and wait for "started".
start() {
	name=$1
	shift
	"$mirror" "$@" >"$work/$name.out" 2>"$work/$name.log" &
	eval "pid_$name=$!"
	pids="$pids $!"
	i=0
	until grep -q '^started' "$work/$name.out" 2>/dev/null; do
		if ! kill -0 "$(pid_of "$name")" 2>/dev/null; then
			wait "$(pid_of "$name")"
			status=$?
			if test $status -eq 3; then
				echo "SKIP: $me: the $backend backend cannot run here:"
				cat "$work/$name.log"
				exit 77
			fi
			cat "$work/$name.log"
			fail "the mirror exited with status $status before it started"
		fi
		i=$((i + 1))
		test $i -lt 200 || fail "the mirror did not start within 20 s"
		sleep 0.1
	done
}

# deep_dir: prints $work/deep followed by ten names of 240 characters, a
# directory whose absolute path is longer than PATH_MAX (made by the caller).
deep_dir() {
	long=$(printf '%0240d' 0 | tr 0 p)
	d=$work/deep
	i=0
	while test $i -lt 10; do
		d=$d/$long
		i=$((i + 1))
	done
	echo "$d"
}

pid_of() {
	eval "echo \$pid_$1"
}

# sync NAME: ask the mirror for quiescence and wait for its "synced" line;
# sets overflows, anomalies and errors from it.
sync_mirror() {
	name=$1
	before=$(grep -c '^synced' "$work/$name.out")
	kill -USR1 "$(pid_of "$name")" || fail "the mirror is gone"
	i=0
	while test "$(grep -c '^synced' "$work/$name.out")" -le "$before"; do
		kill -0 "$(pid_of "$name")" 2>/dev/null || {
			tail -n 20 "$work/$name.log"
			fail "the mirror died"
		}
		i=$((i + 1))
		test $i -lt 1200 || fail "the mirror did not sync within 60 s"
		sleep 0.05
	done
	line=$(grep '^synced' "$work/$name.out" | tail -n 1)
	overflows=$(echo "$line" | sed -n 's/.* overflows=\([0-9]*\).*/\1/p')
	anomalies=$(echo "$line" | sed -n 's/.* anomalies=\([0-9]*\).*/\1/p')
	errors=$(echo "$line" | sed -n 's/.* errors=\([0-9]*\).*/\1/p')
}

# ---- comparing trees ------------------------------------------------------------

# One line per entry: "d path" for a directory, "f path" for anything else;
# entries whose name matches $2 (an exclude pattern), and what they hold,
# left out.
listing() {
	(cd "$1" && find . -mindepth 1 \( -name "${2:-}" -prune \) -o \
		\( -type d -printf 'd %P\n' \) -o -printf 'f %P\n') |
		LC_ALL=C sort
}

# compare NAME SRC DST WHAT [PATTERN]: the copy must equal the tree (less
# what PATTERN, the mirror's exclude pattern, hides).
compare() {
	name=$1
	listing "$2" "${5:-}" >"$work/src.list"
	listing "$3" "${5:-}" >"$work/dst.list"
	if ! diff -u "$work/src.list" "$work/dst.list" >"$work/diff"; then
		echo "$me: $4: the copy differs from the tree (- tree, + copy):"
		sed -n '3,$p' "$work/diff" | grep '^[-+]' | head -n 50
		echo "$me: the mirror's last events (the full log is $work/$name.log):"
		tail -n 40 "$work/$name.log"
		MIRROR_KEEP=1
		# (A private tmpfs goes with its namespace: MIRROR_SAVE=DIR keeps a copy.)
		test -z "${MIRROR_SAVE:-}" || cp -a "$work" "$MIRROR_SAVE/"
		fail "$4: the copy is not equal to the tree"
	fi
	echo "$me: $4: equal ($(wc -l <"$work/src.list") entries)"
}

# check_clean NAME WHAT: no anomaly and no ERROR so far.
check_clean() {
	if test "$anomalies" != 0 || test "$errors" != 0; then
		grep -e 'anomaly' -e 'not watched' "$work/$1.log" | head -n 20
		MIRROR_KEEP=1
		fail "$2: $anomalies anomalies, $errors ERROR events"
	fi
}

