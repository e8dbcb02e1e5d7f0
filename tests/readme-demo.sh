#!/bin/sh
# The README's first command as a new user runs it: `scripts/demo DIR` under
# dash (Debian's /bin/sh, which ends a script on a failing `shift`), with a
# few changes made in DIR.  Fails unless it prints each of them within
# seconds; scripts/test runs it after its build, so the demo's own setup and
# build steps find everything in place.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
sh=/bin/sh
command -v dash >/dev/null && sh=$(command -v dash)
dir=$(mktemp -d)
out=$dir.out
pid=
cleanup() {
	[ -z "$pid" ] || kill "$pid" 2>/dev/null || true
	rm -rf "$dir" "$out" "$out.err"
}
trap cleanup EXIT
fail() {
	echo "readme-demo: $*"
	echo "---- stdout"; cat "$out"
	echo "---- stderr"; cat "$out.err"
	exit 1
}
# waits up to 10 s for a line of the demo's output (an extended regex)
expect() {
	i=0
	until grep -qxE "$1" "$out"; do
		i=$((i + 1))
		[ "$i" -le 100 ] || fail "no line: $1"
		sleep 0.1
	done
}

timeout 600 "$sh" "$top/scripts/demo" "$dir" >"$out" 2>"$out.err" &
pid=$!
# The watch is ready when a file made now is reported; until then the demo is
# installing, building or listing.
i=0
until grep -q probe "$out"; do
	kill -0 "$pid" 2>/dev/null || { wait "$pid" || rc=$?; fail "the demo exited (status ${rc:-0}) before reporting a change"; }
	i=$((i + 1))
	[ "$i" -le 1200 ] || fail "nothing reported in 600 s"
	: >"$dir/probe$i"
	sleep 0.5
done
mkdir "$dir/sub"
echo hello >"$dir/sub/file"
mv "$dir/sub/file" "$dir/sub/renamed"
rm -r "$dir/sub"
expect "create isdir \"$dir/sub\""
expect "delete \"$dir/sub/renamed\""
expect "delete isdir \"$dir/sub\""
# sub/file was made before the library watched sub/ (found by its listing:
# synthetic), then renamed; or, when the listing came after the mv (this
# shell's mv against the library's read of sub's CREATE: a race on a busy
# machine), the listing found sub/renamed.  Either way, each change once.
if ! { grep -qxE "create (synthetic )?\"$dir/sub/file\"" "$out" &&
	grep -qxF "rename \"$dir/sub/renamed\" from \"$dir/sub/file\"" "$out"; } &&
	! grep -qxF "create synthetic \"$dir/sub/renamed\"" "$out"; then
	fail "neither sub/file made and renamed, nor sub/renamed listed"
fi
echo "readme-demo: scripts/demo under $sh printed every change"
