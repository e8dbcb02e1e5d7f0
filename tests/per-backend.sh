#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# per-backend.sh tests/TEST-BACKEND.sh: runs the test TEST on one backend.
# The per-backend tests of make check are wrappers that make writes from the
# lists of tests/backends.am, each calling this script with its own name;
# this is the one place that says how a test is started and what a backend
# name means.  BACKEND is inotify, fanotify, dnotify or poll, or one of:
#   fanotify-user  fanotify as user nobody (no groups, no capabilities):
#                  inode marks instead of filesystem marks
#   fanotify-inode fanotify as root with the library's policy: inode marks
#                  for small trees, as a program of the user's gets them
#                  (tests/conformance takes filesystem marks as root)
#   fanotify-fs    fanotify as root with filesystem marks, on a tmpfs in a
#                  mount namespace of its own, so that the mark hears this
#                  test only (then the kernel queue is unlimited)
# The mirror's tests (mirror-*) run fanotify as nobody too: as root, their
# fanotify would take filesystem marks on the shared /tmp, where every other
# test's activity reaches the mirror; TEST-fanotify-fs is their root case.
# Exit: the test's (0 pass, 1 fail, 77 skip).
: "${top_srcdir:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${top_builddir:=$(pwd)}"
export top_srcdir top_builddir
name=${1:?usage: per-backend.sh tests/TEST-BACKEND.sh}
name=${name##*tests/}
name=${name%.sh}
case $name in
*-fanotify-user) backend=fanotify how=nobody ;;
*-fanotify-fs) backend=fanotify how=fs ;;
*-fanotify-inode) backend=fanotify how=inode ;;
*) backend=${name##*-} how=plain ;;
esac
test=${name%-"$backend"*}
case $test,$backend in mirror-*,fanotify) [ "$how" = plain ] && how=nobody ;; esac
# How each test is started: a program of the build, or a script of the sources.
case $test in
# The conformance cases named sysctl_* lower a limit of the whole machine
# (an inotify sysctl): they are a test of their own, which make check runs
# alone (tests/serial-tests.txt), while the others run beside other tests.
conformance) set -- "$top_builddir/tests/conformance"; export CONFORMANCE_SKIP='sysctl_*' ;;
conformance-sysctl) set -- "$top_builddir/tests/conformance"; export CONFORMANCE_FILTER='sysctl_*' ;;
*) set -- "$top_srcdir/tests/$test.sh" ;;
esac
[ -x "$1" ] || { echo "per-backend.sh: no test $1 (from $name)"; exit 1; }
case $how in
plain) exec "$@" "$backend" ;;
nobody) exec "$top_srcdir/tests/as-nobody.sh" "$@" "$backend" ;;
inode)
	[ "$(id -u)" = 0 ] || { echo "SKIP: as root only (inode marks as nobody: -fanotify-user)"; exit 77; }
	NOTIFYX_FANOTIFY_INODE_MAX=100000 exec "$@" "$backend" ;;
fs)
	[ "$(id -u)" = 0 ] || { echo "SKIP: filesystem marks need root"; exit 77; }
	MIRROR_UNLIMITED_QUEUE=1 exec "$top_srcdir/tests/fanotify-private-tmp.sh" "$@" "$backend" ;;
esac
