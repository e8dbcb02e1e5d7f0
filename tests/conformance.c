/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Conformance test: the rules of API.md on the real kernel, for the backend
 * named in argv[1] ("inotify", "fanotify", "dnotify", "poll"; none: AUTO).
 * This file: main, and handles and descriptors (poll, epoll, CLOEXEC, fork
 * and exec).  Each conf-*.c is a group of cases that main runs in turn
 * (conformance.h lists them): conf-config.c the configuration and names,
 * conf-watch.c watches, exclude and LIST, conf-read.c notifyx_read,
 * conf-events.c the event rules, conf-process.c threads, signal storms and
 * a killed reader; the edges of 0.2: conf-deep.c (deep paths, rm -rf),
 * conf-roots.c (moved roots, umount -l, self events), conf-exchange.c,
 * conf-listing.c (LIST beside other watches and under change); conf-hold.c
 * the hold of a move's first half; conf-rescan.c and conf-rescan-churn.c
 * RESCAN.  conf-util.c: the helpers several of them share.
 * Exit 77 when the backend cannot start here.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "conformance.h"

/* ---- handles and descriptors ---- */

static void fd_poll(void **state)
{
	struct tu_fix *f = F(state);
	struct pollfd p = { .fd = notifyx_fd(f->nx), .events = POLLIN };
	int wd = tu_add(&f->log, f->dir, NOTIFYX_CREATE, 0);

	assert_true(p.fd >= 0);
	tu_touch(tu_path(f->dir, "f"));
	TU_EQ("poll(notifyx_fd) with an event pending", 1, poll(&p, 1, TU_WAIT_MS));
	assert_true(p.revents & POLLIN);
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "f");
	/* select(2) sees the same readiness. */
	tu_touch(tu_path(f->dir, "g"));
	{
		fd_set rs;
		struct timeval tv = { TU_WAIT_MS / 1000, 0 };

		FD_ZERO(&rs);
		FD_SET(p.fd, &rs);
		TU_EQ("select(notifyx_fd) with an event pending", 1,
		      select(p.fd + 1, &rs, NULL, NULL, &tv));
	}
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "g");
}

static int epoll_ready(int ep, int ms)
{
	struct epoll_event e;
	int r;

	do
		r = epoll_wait(ep, &e, 1, ms);
	while (r < 0 && errno == EINTR);
	return r;
}

static void fd_epoll_level(void **state)
{
	struct tu_fix *f = F(state);
	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event e = { .events = EPOLLIN };
	int wd = tu_add(&f->log, f->dir, NOTIFYX_CREATE, 0);

	assert_true(ep >= 0);
	assert_int_equal(epoll_ctl(ep, EPOLL_CTL_ADD, notifyx_fd(f->nx), &e), 0);
	tu_touch(tu_path(f->dir, "f"));
	TU_EQ("epoll (level) with an event pending", 1, epoll_ready(ep, TU_WAIT_MS));
	/* Level-triggered: still ready while nothing was read. */
	TU_EQ("epoll (level), second wait without reading", 1, epoll_ready(ep, 0));
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "f");
	tu_touch(tu_path(f->dir, "g"));
	TU_EQ("epoll (level) after a new event", 1, epoll_ready(ep, TU_WAIT_MS));
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "g");
	close(ep);
}

static void fd_epoll_edge(void **state)
{
	struct tu_fix *f = F(state);
	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event e = { .events = EPOLLIN | EPOLLET };
	int wd = tu_add(&f->log, f->dir, NOTIFYX_CREATE, 0);
	int i;

	assert_true(ep >= 0);
	assert_int_equal(epoll_ctl(ep, EPOLL_CTL_ADD, notifyx_fd(f->nx), &e), 0);
	for (i = 0; i < 5; i++) {
		const char *name = tu_fmt("f%d", i);
		size_t from = f->log.n;

		tu_touch(tu_path(f->dir, name));
		if (epoll_ready(ep, TU_WAIT_MS) != 1) {
			tu_dump(&f->log, "events read so far");
			fail_msg("epoll (edge-triggered): no edge within %d ms after creating %s "
				 "(round %d; the previous round read until EAGAIN)", TU_WAIT_MS, name, i);
		}
		/* Read until EAGAIN, as edge-triggered users do. */
		TU_WAIT_FROM(&f->log, from, wd, NOTIFYX_CREATE, name);
		tu_pull(&f->log);
	}
	close(ep);
}

static int has_fd(const int *v, size_t n, int fd)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (v[i] == fd)
			return 1;
	return 0;
}

static void fd_cloexec_and_count(void **state)
{
	struct tu_fix *f = F(state);
	size_t n0, n1, n2, i, fresh = 0;
	int *before, *after, *end;
	struct notifyx *nx;
	int wd;

	tu_mkdir(tu_path(f->dir, "a"));
	tu_mkdir(tu_path(f->dir, "a/b"));
	tu_touch(tu_path(f->dir, "a/b/f"));
	before = tu_fds(&n0);
	nx = tu_open(NOTIFYX_NONBLOCK, 0);
	assert_non_null(nx);
	wd = notifyx_add_watch(nx, f->dir, NOTIFYX_ALL_EVENTS & notifyx_supported_events(nx),
			       NOTIFYX_WATCH_RECURSIVE);
	assert_true(wd > 0);
	assert_true(notifyx_add_watch(nx, tu_path(f->dir, "a/b/f"), NOTIFYX_MODIFY, 0) > 0);
	after = tu_fds(&n1);
	for (i = 0; i < n1; i++) {
		int fl;

		if (has_fd(before, n0, after[i]))
			continue;
		fresh++;
		fl = fcntl(after[i], F_GETFD);
		if (fl < 0 || !(fl & FD_CLOEXEC)) {
			char l[64], t[256] = "?";
			ssize_t k;

			snprintf(l, sizeof l, "/proc/self/fd/%d", after[i]);
			k = readlink(l, t, sizeof t - 1);
			t[k > 0 ? k : 1] = 0;
			fail_msg("descriptor %d (%s) opened by the library is not close-on-exec",
				 after[i], t);
		}
	}
	assert_true(fresh > 0 || notifyx_fd(nx) >= 0);
	assert_true(has_fd(after, n1, notifyx_fd(nx)));
	assert_int_equal(notifyx_close(nx), 0);
	end = tu_fds(&n2);
	if (n2 != n0) {
		print_error("descriptors before open: %zu, after close: %zu\n", n0, n2);
		for (i = 0; i < n2; i++)
			if (!has_fd(before, n0, end[i]))
				print_error("  fd %d left open\n", end[i]);
		fail_msg("notifyx_close did not restore the descriptor count");
	}
	free(before);
	free(after);
	free(end);
}

/* The descriptors an exec'd child holds: "fd target" per line, from /bin/sh. */
static char *exec_child_fds(void)
{
	int p[2];
	pid_t pid;
	static char out[16384];
	size_t n = 0;
	ssize_t r;
	int status;

	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(p[1], 1);
		execl("/bin/sh", "sh", "-c",
		      "cd /proc/$$/fd && for f in *; do echo \"$f $(readlink $f)\"; done", (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	while (n < sizeof out - 1 && (r = read(p[0], out + n, sizeof out - 1 - n)) > 0)
		n += (size_t)r;
	out[n] = 0;
	close(p[0]);
	waitpid(pid, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("exec'd /bin/sh listing its descriptors failed (status %#x)", status);
	return out;
}

static void fd_exec(void **state)
{
	struct tu_fix *f = F(state);
	size_t n0, n1, i;
	int *before, *after;
	char *listing;

	tu_mkdir(tu_path(f->dir, "a"));
	before = tu_fds(&n0);
	tu_add(&f->log, f->dir, NOTIFYX_CREATE, NOTIFYX_WATCH_RECURSIVE);
	tu_add(&f->log, tu_path(f->dir, "a"), NOTIFYX_CREATE, 0);
	after = tu_fds(&n1);
	listing = exec_child_fds();
	for (i = 0; i < n1; i++) {
		char l[64], t[256], want[400];
		ssize_t k;

		if (has_fd(before, n0, after[i]))
			continue;
		snprintf(l, sizeof l, "/proc/self/fd/%d", after[i]);
		k = readlink(l, t, sizeof t - 1);
		if (k <= 0)
			continue;
		t[k] = 0;
		snprintf(want, sizeof want, "\n%d %s\n", after[i], t);
		/* Listing lines, each preceded by a newline for matching. */
		{
			char *full = malloc(strlen(listing) + 2);

			assert_non_null(full);
			full[0] = '\n';
			strcpy(full + 1, listing);
			if (strstr(full, want)) {
				print_error("exec'd child's descriptors:\n%s", listing);
				free(full);
				fail_msg("the exec'd child holds the library's descriptor %d (%s)",
					 after[i], t);
			}
			free(full);
		}
	}
	free(before);
	free(after);
}

static void fd_fork(void **state)
{
	struct tu_fix *f = F(state);
	int wd = tu_add(&f->log, f->dir, NOTIFYX_CREATE, NOTIFYX_WATCH_RECURSIVE);
	int status;
	pid_t pid;

	tu_mkdir(tu_path(f->dir, "sub"));
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "sub");
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* Only notifyx_close may be called; the others must fail (ECHILD). */
		char buf[NOTIFYX_EVENT_MAX];
		int bad = 0;

		errno = 0;
		if (notifyx_add_watch(f->nx, f->dir, NOTIFYX_CREATE, 0) != -1 || errno != ECHILD) {
			fprintf(stderr, "child: add_watch: expected -1 ECHILD, errno %s\n", strerrorname_np(errno));
			bad |= 1;
		}
		errno = 0;
		if (notifyx_read(f->nx, buf, sizeof buf) != -1 || errno != ECHILD) {
			fprintf(stderr, "child: read: expected -1 ECHILD, errno %s\n", strerrorname_np(errno));
			bad |= 2;
		}
		errno = 0;
		if (notifyx_rm_watch(f->nx, wd) != -1 || errno != ECHILD) {
			fprintf(stderr, "child: rm_watch: expected -1 ECHILD, errno %s\n", strerrorname_np(errno));
			bad |= 4;
		}
		errno = 0;
		if (notifyx_exclude(f->nx, "*.x") != -1 || errno != ECHILD) {
			fprintf(stderr, "child: exclude: expected -1 ECHILD, errno %s\n", strerrorname_np(errno));
			bad |= 8;
		}
		if (notifyx_close(f->nx) != 0) {
			fprintf(stderr, "child: close failed\n");
			bad |= 16;
		}
		_exit(bad);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("child after fork: status %#x (bits: 1 add_watch, 2 read, 4 rm_watch, "
			 "8 exclude did not fail with ECHILD; 16 close failed)", status);
	/* The parent's handle works as before, in the root and in the subdirectory. */
	tu_touch(tu_path(f->dir, "f"));
	tu_touch(tu_path(f->dir, "sub/g"));
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "f");
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "sub/g");
	assert_int_equal(notifyx_rm_watch(f->nx, wd), 0);
	TU_WAIT(&f->log, wd, NOTIFYX_IGNORED, "");
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(fd_poll, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(fd_epoll_level, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(fd_epoll_edge, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(fd_cloexec_and_count, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(fd_exec, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(fd_fork, tu_setup, tu_teardown),
	};

	/* As root: filesystem marks, whatever the size of the tree (the
	 * library's policy takes inode marks for small trees; see
	 * fanotify-repair.c), unless the run says otherwise
	 * (tests/conformance-fanotify-inode.sh: that policy). */
	setenv("NOTIFYX_FANOTIFY_INODE_MAX", "0", 0);
	struct notifyx *nx;
	const char *name = argc > 1 ? argv[1] : "auto";
	int failed;

	tu_backend = tu_backend_from_name(name);
	if (tu_backend == UINT32_MAX) {
		fprintf(stderr, "usage: %s [auto|inotify|fanotify|dnotify|poll]\n", argv[0]);
		return 2;
	}
	nx = tu_open(NOTIFYX_NONBLOCK, 0);
	if (!nx) {
		printf("SKIP: the %s backend cannot start here: notifyx_open failed with %s (%s)\n",
		       name, strerrorname_np(errno), strerror(errno));
		return 77;
	}
	printf("conformance: backend %s, supported events %s, running as uid %d\n",
	       notifyx_backend_name(notifyx_backend(nx)), tu_mask_str(notifyx_supported_events(nx)),
	       (int)geteuid());
	notifyx_close(nx);
	/* CONFORMANCE_FILTER=pattern runs only the cases whose name matches
	 * (cmocka's wildcards), to run one case by hand; CONFORMANCE_SKIP=
	 * pattern runs all but those.  The cases that change a limit the
	 * whole machine shares are named sysctl_*: make check runs them alone
	 * (tests/per-backend.sh, tests/serial-tests.txt). */
	if (getenv("CONFORMANCE_FILTER"))
		cmocka_set_test_filter(getenv("CONFORMANCE_FILTER"));
	if (getenv("CONFORMANCE_SKIP"))
		cmocka_set_skip_filter(getenv("CONFORMANCE_SKIP"));
	failed = cmocka_run_group_tests_name(tu_fmt("conformance (%s)", name), tests, NULL, NULL);
	failed += conf_config_run();
	failed += conf_watch_run();
	failed += conf_read_run();
	failed += conf_events_run();
	failed += conf_process_run();
	failed += conf_deep_run();
	failed += conf_roots_run();
	failed += conf_exchange_run();
	failed += conf_listing_run();
	failed += conf_hold_run();
	failed += conf_rescan_run();
	failed += conf_rescan_churn_run();
	tu_watches_restore();
	return failed ? 1 : 0;
}
