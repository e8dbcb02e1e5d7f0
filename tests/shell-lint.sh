#!/bin/sh
# Every shell script of the project is POSIX sh: Debian's /bin/sh is dash,
# where a bashism fails or, worse, ends a script silently (a failing `shift`
# did that to scripts/demo).  shellcheck -s sh at warning level; SC2034 and
# SC2154 are off because the test scripts share variables through the
# libraries they source.
srcdir=${top_srcdir:-$(dirname "$0")/..}
command -v shellcheck >/dev/null || { echo "SKIP: shellcheck is not installed"; exit 77; }
files=$(find "$srcdir/scripts" "$srcdir/tests" "$srcdir/bench" "$srcdir/.ci" -type f \
	\( -name '*.sh' -o -path '*/scripts/*' -o -path '*/.ci/*' \) 2>/dev/null |
	while read -r f; do
		# scripts, and the libraries they source (no #! line)
		case $f in *-lib.sh) echo "$f" ;; *) head -n 1 "$f" | grep -q '^#!/bin/sh' && echo "$f" ;; esac
	done)
[ -n "$files" ] || { echo "no shell scripts found under $srcdir"; exit 1; }
# shellcheck disable=SC2086 # one word per file
shellcheck -s sh -S warning -e SC2034,SC2154 $files && echo "$(echo "$files" | wc -l) scripts are clean"
