#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Fault-injection sweep of one backend (argv[1]: inotify, fanotify, dnotify
# or poll; default inotify): runs tests/fault/scenario under the shim
# (tests/fault/libfaultshim.so) with FAULT_N = 1, 2, ... until a run counts
# fewer calls than N, for each errno profile below, and prints one line per
# run: N, the kind of call that failed, its site in the library (an offset,
# resolved with addr2line in a table at the end),
# the errno, and the outcome (where the fault surfaced: which public call,
# and how).  Builds nothing: everything is taken from $top_builddir.
#
# A run fails on: the scenario's own verdict (undocumented errno, handle
# unusable or inconsistent afterwards, OVERFLOW/ERROR without a fault, an
# event after IGNORED, descriptors or library memory left after close), a
# crash, or a hang (timeout).
#
# Environment:
#   SWEEP_PROFILES   names of profiles to run (default: all)
#   SWEEP_VALGRIND=1 run each scenario under valgrind --leak-check=full too
#                    (slow: about a second a run)
#   SWEEP_TIMEOUT    seconds per run (default 30)
#   SWEEP_MAX_N      safety bound on N (default 2000)
#   SWEEP_VERBOSE=1  print the scenario's messages for every run, not only failures
# Exit status: 0 when every run passed, 1 otherwise, 77 when the shim or the
# scenario is not built or the backend cannot start here.

top_builddir=${top_builddir:-.}
shim=$top_builddir/tests/fault/.libs/libfaultshim.so
scenario=$top_builddir/tests/fault/scenario
lib=$(ls "$top_builddir"/libnotifyx/.libs/libnotifyx.so.*.*.* 2>/dev/null | head -n 1)
timeout_s=${SWEEP_TIMEOUT:-30}
max_n=${SWEEP_MAX_N:-2000}

if [ ! -f "$shim" ] || [ ! -x "$scenario" ]; then
	echo "SKIP: $shim or $scenario not built (make check builds them)"
	exit 77
fi
backend=${1:-inotify}
# The scenario says why the backend cannot start (exit 77), or 2 when the
# name is not a backend's.
"$scenario" "$backend" probe || exit $?

# name | FAULT_KINDS | FAULT_ERRNO | FAULT_COUNT
# default: every kind, with the errno each has by default in shim.c (ENOMEM
#   for allocations, EMFILE for calls that make descriptors, ENOSPC for
#   inotify_add_watch, EIO for reads of the inotify descriptor, EAGAIN for
#   reads and writes of the eventfd and timerfd, ...)
# eintr, eagain: the kernel reads interrupted or finding nothing
# io: errors that concern one directory rather than a resource
# double: two consecutive calls fail (a failure while handling a failure)
# Not write: the library writes only to its eventfd, 1 onto a counter at 0,
#   which cannot fail.
# The kinds each backend's library code calls (backends/*.c, libnotifyx/).
core=malloc,calloc,realloc,strdup,strndup,getcwd,open,read,stat,lstat,fstat,fstatat,epoll_create1,epoll_ctl,epoll_wait,eventfd,timerfd_create,timerfd_settime
case $backend in
inotify)
	kinds=$core,getdents64,inotify_init1,inotify_add_watch,inotify_rm_watch
	io=open=EACCES,getdents64=EIO,inotify_add_watch=EACCES,stat=EACCES,lstat=EACCES,fstat=EIO
	iokinds=open,getdents64,inotify_add_watch,stat,lstat,fstat
	run=all ;;
fanotify)
	kinds=$core,getdents64,fanotify_init,fanotify_mark,statx,fstatfs,name_to_handle_at,open_by_handle_at,readlink
	io=open=EACCES,fanotify_mark=EACCES,stat=EACCES,lstat=EACCES,fstat=EIO,statx=EACCES,fstatfs=EIO,name_to_handle_at=EIO,open_by_handle_at=EACCES,readlink=EACCES
	iokinds=open,fanotify_mark,stat,lstat,fstat,statx,fstatfs,name_to_handle_at,open_by_handle_at,readlink
	# About 7 times as many counted calls as inotify: no "double" profile.
	run='default eintr eagain io' ;;
dnotify)
	kinds=$core,getdents64,statx,fcntl,ioctl,pipe2,sigaction
	io=open=EACCES,getdents64=EIO,stat=EACCES,lstat=EACCES,fstat=EIO,statx=EACCES
	iokinds=open,getdents64,stat,lstat,fstat,statx
	run=all ;;
poll)
	kinds=$core,getdents64,statx,ioctl
	io=open=EACCES,getdents64=EIO,stat=EACCES,lstat=EACCES,fstat=EIO,statx=EACCES
	iokinds=open,getdents64,stat,lstat,fstat,statx
	run=all ;;
esac
[ "$run" = all ] || SWEEP_PROFILES=${SWEEP_PROFILES:-$run}

# name | FAULT_KINDS | FAULT_ERRNO | FAULT_COUNT
# default: every kind, with the errno each has by default in shim.c (ENOMEM
#   for allocations, EMFILE for calls that make descriptors, ENOSPC for
#   inotify_add_watch and fanotify_mark, EIO for reads of the inotify and
#   fanotify descriptors, EAGAIN for reads and writes of the eventfd, timerfd
#   and pipe, ...)
# eintr, eagain: the kernel reads interrupted or finding nothing
# io: errors that concern one directory rather than a resource
# double: two consecutive calls fail (a failure while handling a failure)
# Not write: the library writes only to its eventfd, 1 onto a counter at 0,
#   which cannot fail, and (dnotify) to its pipe from a signal handler, where
#   a failure is the overflow the backend handles, and where the shim is not
#   async-signal-safe.
profiles="default|$kinds||1
eintr|read|EINTR|1
eagain|read|EAGAIN|1
io|$iokinds|$io|1
double|$kinds||2"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/nxsweep.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
export TMPDIR="$tmp"

# sites FILE: each address of FILE (one a line) as "ADDRESS function
# (file:line)", from one addr2line call: one call a run would cost as much
# as the run itself.
sites() {
	sort -u "$1" >"$tmp/addrs"
	if [ -n "$lib" ] && command -v addr2line >/dev/null 2>&1; then
		# shellcheck disable=SC2046  # one word an address
		addr2line -f -s -e "$lib" $(cat "$tmp/addrs") 2>/dev/null | paste - - |
			paste "$tmp/addrs" - | sed 's/^\([^\t]*\)\t\([^\t]*\)\t\(.*\)/  \1  \2 (\3)/'
	else
		sed 's/^/  /' "$tmp/addrs"
	fi
}

sites_of() { echo "$1" >"$tmp/one" && sites "$tmp/one"; }

# parse REPORT OUT: sets counted, kind, err, addr (from the shim's report)
# and result (the scenario's last RESULT line) with shell builtins only: a
# sweep makes thousands of runs, and a process spawned per field was most
# of the time of a run.
parse() {
	counted='' kind='' err='' addr='' result=''
	while IFS= read -r line; do
		case $line in
		counted=*) counted=${line#counted=} counted=${counted%% *} ;;
		"inject "*)
			if [ -z "$kind" ]; then
				kind=${line#* kind=} kind=${kind%% *}
				err=${line#* errno=} err=${err%% *}
				addr=${line#* site=} addr=${addr%% *}
			fi ;;
		esac
	done <"$1"
	while IFS= read -r line; do
		case $line in "RESULT "*) result=${line#RESULT } ;; esac
	done <"$2"
}

total=0
bad=0
failures=$tmp/failures
: >"$failures"

for p in $(echo "$profiles" | tr ' ' '_'); do
	name=$(echo "$p" | cut -d'|' -f1)
	kinds=$(echo "$p" | cut -d'|' -f2)
	errs=$(echo "$p" | cut -d'|' -f3)
	count=$(echo "$p" | cut -d'|' -f4)
	if [ -n "${SWEEP_PROFILES:-}" ]; then
		case " $SWEEP_PROFILES " in *" $name "*) ;; *) continue ;; esac
	fi
	echo "== $backend profile $name: FAULT_KINDS=${kinds:-all} FAULT_ERRNO=${errs:-default} FAULT_COUNT=$count"
	printf '%5s  %-28s %-8s %-10s %s\n' N kind errno site outcome
	n=1
	pok=0
	pbad=0
	while [ "$n" -le "$max_n" ]; do
		rep=$tmp/report
		: >"$rep"
		set -- "$scenario" "$backend"
		if [ "${SWEEP_VALGRIND:-0}" = 1 ]; then
			# nouserintercepts: valgrind replaces libc's allocator only,
			# so the shim's malloc and free stay in front of it.
			set -- valgrind -q --soname-synonyms=somalloc=nouserintercepts \
				--leak-check=full --errors-for-leak-kinds=definite,indirect \
				--error-exitcode=1 "$@"
		fi
		LD_PRELOAD=$shim FAULT_N=$n FAULT_COUNT=$count FAULT_KINDS=$kinds FAULT_ERRNO=$errs \
			FAULT_REPORT=$rep timeout -s KILL "$timeout_s" "$@" >"$tmp/out" 2>"$tmp/err"
		rc=$?
		parse "$rep" "$tmp/out"
		if [ -z "$kind" ]; then
			# N is past the last counted call: this run injected nothing.
			if [ "$rc" -ne 0 ]; then
				echo "  N=$n without injection: rc=$rc" >>"$failures"
				sed 's/^/    /' "$tmp/err" >>"$failures"
				bad=$((bad + 1))
				pbad=$((pbad + 1))
			fi
			total=$((total + 1))
			echo "   (N=$n: no call left to fail, ${counted:-?} counted; clean run rc=$rc)"
			break
		fi
		echo "$addr" >>"$tmp/addresses"
		case $rc in
		0) outcome=$result ;;
		1) outcome="$result" ;;
		137) outcome="HANG (killed after ${timeout_s}s)" ;;
		*) outcome="CRASH rc=$rc ${result}" ;;
		esac
		[ -z "$outcome" ] && outcome="rc=$rc (no RESULT line)"
		printf '%5s  %-28s %-8s %-10s %s\n' "$n" "$kind" "$err" "$addr" "$outcome"
		total=$((total + 1))
		if [ "$rc" -ne 0 ]; then
			bad=$((bad + 1))
			pbad=$((pbad + 1))
			{
				echo "  profile=$name FAULT_N=$n FAULT_COUNT=$count FAULT_KINDS=$kinds FAULT_ERRNO=$errs: $kind $err at $(sites_of "$addr"): $outcome"
				sed 's/^/    /' "$tmp/err" | head -n 20
			} >>"$failures"
		else
			pok=$((pok + 1))
			if [ "${SWEEP_VERBOSE:-0}" = 1 ]; then sed 's/^/    /' "$tmp/err"; fi
		fi
		if [ -n "$counted" ] && [ "$counted" -lt "$n" ]; then
			break
		fi
		n=$((n + 1))
	done
	echo "   profile $name: $pok passed, $pbad failed"
done
if [ -s "$tmp/addresses" ]; then
	echo
	echo "== sites (offsets in $lib):"
	sites "$tmp/addresses"
fi

echo
echo "== $backend: $total runs, $bad failed"
if [ "$bad" -gt 0 ]; then
	echo "Failures (reproduce: LD_PRELOAD=$shim FAULT_N=.. FAULT_COUNT=.. FAULT_KINDS=.. FAULT_ERRNO=.. $scenario $backend):"
	cat "$failures"
	exit 1
fi
exit 0
