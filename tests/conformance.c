/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Conformance test: the rules of API.md on the real kernel, for the backend
 * named in argv[1] ("inotify", "fanotify", "dnotify", "poll"; none: AUTO).
 * This file: handles and descriptors, configuration, watches, exclude,
 * LIST, names, read, fork and exec.  conf-events.c: the event rules.
 * conf-process.c: threads, signal storms, killing a blocked reader.
 * conf-edges.c: the edges of 0.2 (deep paths, moved roots, exchanges, ...).
 * conf-hold.c: the hold of a move's first half.  conf-rescan.c: RESCAN.
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
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

int conf_events_run(void);
int conf_process_run(void);
int conf_edges_run(void);
int conf_hold_run(void);
int conf_rescan_run(void);

/* The header's version check is an integer constant expression. */
#if !NOTIFYX_CHECK_VERSION(0, 0, 0)
#error "NOTIFYX_CHECK_VERSION(0, 0, 0) is false"
#endif
#if !NOTIFYX_CHECK_VERSION(NOTIFYX_VERSION_MAJOR, NOTIFYX_VERSION_MINOR, NOTIFYX_VERSION_PATCH)
#error "NOTIFYX_CHECK_VERSION of the header's own version is false"
#endif
#if NOTIFYX_CHECK_VERSION(NOTIFYX_VERSION_MAJOR, NOTIFYX_VERSION_MINOR, NOTIFYX_VERSION_PATCH + 1)
#error "NOTIFYX_CHECK_VERSION of a later patch is true"
#endif
#if NOTIFYX_CHECK_VERSION(NOTIFYX_VERSION_MAJOR + 1, 0, 0)
#error "NOTIFYX_CHECK_VERSION of a later major is true"
#endif

#define F(state) ((struct tu_fix *)*(state))

static const uint32_t all_types[] = {
	NOTIFYX_ACCESS, NOTIFYX_MODIFY, NOTIFYX_ATTRIB, NOTIFYX_CLOSE_WRITE,
	NOTIFYX_CLOSE_NOWRITE, NOTIFYX_OPEN, NOTIFYX_CREATE, NOTIFYX_DELETE,
	NOTIFYX_RENAME, NOTIFYX_MOVED_OUT, NOTIFYX_MOVED_IN, NOTIFYX_DELETE_SELF,
	NOTIFYX_MOVE_SELF, NOTIFYX_OVERFLOW, NOTIFYX_UNMOUNT, NOTIFYX_ERROR, NOTIFYX_IGNORED,
};
#define NTYPES (sizeof all_types / sizeof all_types[0])

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

/* ---- configuration ---- */

static struct notifyx *open_cfg(const void *cfg)
{
	return notifyx_open(cfg);
}

static void config_size(void **state)
{
	struct {
		struct notifyx_config c;
		unsigned char tail[16];
	} big;
	struct notifyx_config c;
	struct notifyx *nx;
	uint32_t sizes[] = { 0, 1, 4, 8, 20, 23 };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		memset(&c, 0, sizeof c);
		c.size = sizes[i];
		c.backend = tu_backend;
		TU_ERRNO(tu_fmt("notifyx_open with size %u (below version 0)", sizes[i]),
			 open_cfg(&c) == NULL, EINVAL);
	}
	memset(&big, 0, sizeof big);
	big.c.size = sizeof big;
	big.c.backend = tu_backend;
	big.c.poll_interval_ms = tu_interval_ms;
	nx = open_cfg(&big);
	if (!nx)
		fail_msg("notifyx_open with a larger size and a zero tail: %s", strerrorname_np(errno));
	notifyx_close(nx);
	for (i = 0; i < sizeof big.tail; i++) {
		memset(big.tail, 0, sizeof big.tail);
		big.tail[i] = 1;
		TU_ERRNO(tu_fmt("notifyx_open with non-zero byte %zu past the known struct", i),
			 open_cfg(&big) == NULL, E2BIG);
	}
	/* The exact size, and NULL (all defaults), work. */
	memset(&c, 0, sizeof c);
	c.size = sizeof c;
	c.backend = tu_backend;
	nx = open_cfg(&c);
	assert_non_null(nx);
	notifyx_close(nx);
}

static void config_flags_backend(void **state)
{
	struct notifyx_config c;
	uint32_t bad_flags[] = { 0x2, 0x4, 0x80000000u, 0xffffffffu };
	uint32_t bad_backends[] = { 5, 6, 100, 0xffffffffu };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof bad_flags / sizeof bad_flags[0]; i++) {
		memset(&c, 0, sizeof c);
		c.size = sizeof c;
		c.backend = tu_backend;
		c.flags = bad_flags[i];
		TU_ERRNO(tu_fmt("notifyx_open with flags %#x", bad_flags[i]), open_cfg(&c) == NULL,
			 EINVAL);
	}
	for (i = 0; i < sizeof bad_backends / sizeof bad_backends[0]; i++) {
		memset(&c, 0, sizeof c);
		c.size = sizeof c;
		c.backend = bad_backends[i];
		TU_ERRNO(tu_fmt("notifyx_open with backend %u", bad_backends[i]),
			 open_cfg(&c) == NULL, EINVAL);
	}
}

/* Open with backend AUTO; returns the backend in use or 0 with *err set. */
static uint32_t open_auto(int *err)
{
	struct notifyx_config c;
	struct notifyx *nx;
	uint32_t b;

	memset(&c, 0, sizeof c);
	c.size = sizeof c;
	nx = notifyx_open(&c);
	if (!nx) {
		*err = errno;
		return 0;
	}
	b = notifyx_backend(nx);
	notifyx_close(nx);
	*err = 0;
	if (b == NOTIFYX_BACKEND_AUTO)
		fail_msg("notifyx_backend returned AUTO (it never does)");
	return b;
}

static uint32_t open_explicit(uint32_t backend, int *err)
{
	struct notifyx_config c;
	struct notifyx *nx;
	uint32_t b;

	memset(&c, 0, sizeof c);
	c.size = sizeof c;
	c.backend = backend;
	nx = notifyx_open(&c);
	if (!nx) {
		*err = errno;
		return 0;
	}
	b = notifyx_backend(nx);
	notifyx_close(nx);
	*err = 0;
	return b;
}

static char *saved_env;

static int env_setup(void **state)
{
	const char *e = getenv("NOTIFYX_BACKEND");

	(void)state;
	saved_env = e ? strdup(e) : NULL;
	return 0;
}

static int env_teardown(void **state)
{
	(void)state;
	if (saved_env)
		setenv("NOTIFYX_BACKEND", saved_env, 1);
	else
		unsetenv("NOTIFYX_BACKEND");
	free(saved_env);
	saved_env = NULL;
	return 0;
}

static void config_env(void **state)
{
	uint32_t plain, b, want;
	int err, err2;
	const char *garbage[] = { "INOTIFY", "Inotify", "inotify ", " poll", "foo", "0", "1",
				  "auto,inotify", "AUTO" };
	size_t i;

	(void)state;
	unsetenv("NOTIFYX_BACKEND");
	plain = open_auto(&err);
	if (!plain)
		fail_msg("notifyx_open(AUTO) without NOTIFYX_BACKEND failed: %s", strerrorname_np(err));
	setenv("NOTIFYX_BACKEND", "", 1);
	b = open_auto(&err);
	TU_EQ("NOTIFYX_BACKEND=\"\" keeps AUTO (backend in use)", plain, b);
	setenv("NOTIFYX_BACKEND", "auto", 1);
	b = open_auto(&err);
	TU_EQ("NOTIFYX_BACKEND=auto keeps AUTO (backend in use)", plain, b);
	for (want = NOTIFYX_BACKEND_INOTIFY; want <= NOTIFYX_BACKEND_POLL; want++) {
		uint32_t direct = open_explicit(want, &err2);

		setenv("NOTIFYX_BACKEND", notifyx_backend_name(want), 1);
		b = open_auto(&err);
		if (direct) {
			if (b != want)
				fail_msg("NOTIFYX_BACKEND=%s: backend %u (%s), errno %s; expected %u",
					 notifyx_backend_name(want), b,
					 b ? notifyx_backend_name(b) : "open failed",
					 err ? strerrorname_np(err) : "-", want);
		} else {
			/* That backend cannot start: the same failure, no fallback. */
			if (b)
				fail_msg("NOTIFYX_BACKEND=%s: the backend cannot start (%s), but open "
					 "fell back to %s", notifyx_backend_name(want),
					 strerrorname_np(err2), notifyx_backend_name(b));
			if (err != err2)
				fail_msg("NOTIFYX_BACKEND=%s: expected errno %s (as opening it "
					 "directly), actual %s", notifyx_backend_name(want),
					 strerrorname_np(err2), strerrorname_np(err));
			print_message("  note: NOTIFYX_BACKEND=%s fails with %s, as opening it directly\n",
				      notifyx_backend_name(want), strerrorname_np(err));
		}
	}
	for (i = 0; i < sizeof garbage / sizeof garbage[0]; i++) {
		setenv("NOTIFYX_BACKEND", garbage[i], 1);
		b = open_auto(&err);
		if (b || err != EINVAL)
			fail_msg("NOTIFYX_BACKEND=\"%s\": expected EINVAL, got %s", garbage[i],
				 b ? notifyx_backend_name(b) : strerrorname_np(err));
	}
	/* Only consulted when the backend is AUTO. */
	setenv("NOTIFYX_BACKEND", "garbage", 1);
	b = open_explicit(plain, &err);
	if (b != plain)
		fail_msg("explicit backend %s with NOTIFYX_BACKEND=garbage: %s (the variable is "
			 "only read for AUTO)", notifyx_backend_name(plain),
			 b ? notifyx_backend_name(b) : strerrorname_np(err));
	for (want = NOTIFYX_BACKEND_INOTIFY; want <= NOTIFYX_BACKEND_POLL; want++) {
		if (want == plain)
			continue;
		setenv("NOTIFYX_BACKEND", notifyx_backend_name(want), 1);
		b = open_explicit(plain, &err);
		if (b != plain)
			fail_msg("explicit backend %s with NOTIFYX_BACKEND=%s: got %s",
				 notifyx_backend_name(plain), notifyx_backend_name(want),
				 b ? notifyx_backend_name(b) : strerrorname_np(err));
	}
}

static void config_null_and_backend(void **state)
{
	struct notifyx *nx;
	uint32_t b;

	(void)state;
	unsetenv("NOTIFYX_BACKEND");
	nx = notifyx_open(NULL);
	if (!nx)
		fail_msg("notifyx_open(NULL): %s", strerrorname_np(errno));
	b = notifyx_backend(nx);
	if (b < NOTIFYX_BACKEND_INOTIFY || b > NOTIFYX_BACKEND_POLL)
		fail_msg("notifyx_backend of an AUTO handle: %u (never AUTO, always a backend)", b);
	assert_true(notifyx_supported_events(nx) != 0);
	assert_true((notifyx_supported_events(nx) & ~NOTIFYX_ALL_EVENTS) == 0);
	notifyx_close(nx);
}

/* ---- names and versions ---- */

static void names(void **state)
{
	static const char *const bn[] = { NULL, "inotify", "fanotify", "dnotify", "poll" };
	uint32_t b, bad[] = { 5, 6, 64, 0x80000000u, 0xffffffffu };
	size_t i, j;
	const char *s;
	char v[64];

	(void)state;
	for (b = 1; b <= 4; b++)
		TU_STREQ(tu_fmt("notifyx_backend_name(%u)", b), bn[b], notifyx_backend_name(b));
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++)
		if (notifyx_backend_name(bad[i]))
			fail_msg("notifyx_backend_name(%u) = \"%s\", expected NULL", bad[i],
				 notifyx_backend_name(bad[i]));
	s = notifyx_backend_name(NOTIFYX_BACKEND_AUTO);
	if (s && strcmp(s, "auto"))
		fail_msg("notifyx_backend_name(AUTO) = \"%s\" (assumed NULL or \"auto\")", s);

	for (i = 0; i < NTYPES; i++) {
		char want[32];
		const char *m = tu_mask_str(all_types[i]);

		for (j = 0; m[j] && j < sizeof want - 1; j++)
			want[j] = (char)(m[j] >= 'A' && m[j] <= 'Z' ? m[j] + 32 : m[j]);
		want[j] = 0;
		TU_STREQ(tu_fmt("notifyx_event_name(%#x)", all_types[i]), want,
			 notifyx_event_name(all_types[i]));
	}
	{
		uint32_t none[] = { 0, NOTIFYX_CREATE | NOTIFYX_DELETE, NOTIFYX_ALL_EVENTS,
				    NOTIFYX_IGNORED | NOTIFYX_OVERFLOW, 0x2000, 0x4000, 0x8000,
				    0x200000, 0x80000000u, 0xffffffffu };

		for (i = 0; i < sizeof none / sizeof none[0]; i++)
			if (notifyx_event_name(none[i]))
				fail_msg("notifyx_event_name(%#x) = \"%s\", expected NULL", none[i],
					 notifyx_event_name(none[i]));
		for (i = 0; i < 32; i++) {
			uint32_t bit = 1u << i;

			if (!(bit & (NOTIFYX_ALL_EVENTS | TU_ALWAYS | NOTIFYX_SYNC)) &&
			    notifyx_event_name(bit))
				fail_msg("notifyx_event_name(%#x) = \"%s\" for an unknown bit", bit,
					 notifyx_event_name(bit));
		}
	}
	snprintf(v, sizeof v, "%d.%d.%d", NOTIFYX_VERSION_MAJOR, NOTIFYX_VERSION_MINOR,
		 NOTIFYX_VERSION_PATCH);
	TU_STREQ("notifyx_version() vs the header's macros", v, notifyx_version());
	assert_true(NOTIFYX_CHECK_VERSION(0, 0, 0));
	assert_true(NOTIFYX_CHECK_VERSION(NOTIFYX_VERSION_MAJOR, NOTIFYX_VERSION_MINOR, 0));
	assert_false(NOTIFYX_CHECK_VERSION(NOTIFYX_VERSION_MAJOR, NOTIFYX_VERSION_MINOR + 1, 0));
	assert_false(NOTIFYX_CHECK_VERSION(NOTIFYX_VERSION_MAJOR + 1, 0, 0));
	if (NOTIFYX_VERSION_MINOR > 0)
		assert_true(NOTIFYX_CHECK_VERSION(NOTIFYX_VERSION_MAJOR, NOTIFYX_VERSION_MINOR - 1, 99));
}

/* ---- watches ---- */

static void watch_wd_never_reused(void **state)
{
	struct tu_fix *f = F(state);
	int seen[64], i, j;

	tu_touch(tu_path(f->dir, "file"));
	for (i = 0; i < 64; i++) {
		const char *p = i % 2 ? f->dir : tu_path(f->dir, "file");

		seen[i] = tu_add(&f->log, p, NOTIFYX_ATTRIB, 0); /* tu_track fails on a reused wd */
		for (j = 0; j < i; j++)
			if (seen[j] == seen[i])
				fail_msg("wd %d reused", seen[i]);
		if (i % 3 != 2) {
			assert_int_equal(notifyx_rm_watch(f->nx, seen[i]), 0);
			if (i % 2)
				TU_WAIT(&f->log, seen[i], NOTIFYX_IGNORED, "");
		}
	}
}

static void watch_same_path_twice(void **state)
{
	struct tu_fix *f = F(state);
	int a = tu_add(&f->log, f->dir, NOTIFYX_CREATE, 0);
	int b = tu_add(&f->log, f->dir, NOTIFYX_CREATE | NOTIFYX_DELETE, 0);

	assert_int_not_equal(a, b);
	tu_touch(tu_path(f->dir, "f"));
	TU_WAIT(&f->log, a, NOTIFYX_CREATE, "f");
	TU_WAIT(&f->log, b, NOTIFYX_CREATE, "f");
	tu_unlink(tu_path(f->dir, "f"));
	TU_WAIT(&f->log, b, NOTIFYX_DELETE, "f");
	tu_settle(&f->log);
	TU_ONCE(&f->log, a, NOTIFYX_CREATE, "f", 0, 0);
	TU_ONCE(&f->log, b, NOTIFYX_CREATE, "f", 0, 0);
	TU_ONCE(&f->log, b, NOTIFYX_DELETE, "f", 0, 0);
	/* Removing one leaves the other receiving. */
	assert_int_equal(notifyx_rm_watch(f->nx, a), 0);
	tu_touch(tu_path(f->dir, "g"));
	TU_WAIT(&f->log, b, NOTIFYX_CREATE, "g");
	tu_settle(&f->log);
	TU_NONE(&f->log, a, NOTIFYX_CREATE, "g");
	TU_ONCE(&f->log, a, NOTIFYX_IGNORED, "", 0, 0);
	TU_NONE(&f->log, b, NOTIFYX_IGNORED, NULL);
}

static void watch_overlapping_recursive(void **state)
{
	struct tu_fix *f = F(state);
	int outer, inner, third;

	tu_mkdir(tu_path(f->dir, "sub"));
	tu_mkdir(tu_path(f->dir, "sub/deep"));
	outer = tu_add(&f->log, f->dir, NOTIFYX_CREATE, NOTIFYX_WATCH_RECURSIVE);
	inner = tu_add(&f->log, tu_path(f->dir, "sub"), NOTIFYX_CREATE | NOTIFYX_DELETE,
		       NOTIFYX_WATCH_RECURSIVE);
	tu_touch(tu_path(f->dir, "sub/deep/f"));
	TU_WAIT(&f->log, outer, NOTIFYX_CREATE, "sub/deep/f");
	TU_WAIT(&f->log, inner, NOTIFYX_CREATE, "deep/f");
	/* A third watch added on a shared directory takes nothing from the others. */
	third = tu_add(&f->log, tu_path(f->dir, "sub/deep"), NOTIFYX_DELETE, 0);
	tu_unlink(tu_path(f->dir, "sub/deep/f"));
	TU_WAIT(&f->log, inner, NOTIFYX_DELETE, "deep/f");
	TU_WAIT(&f->log, third, NOTIFYX_DELETE, "f");
	/* Removing the inner watch leaves the outer receiving, and vice versa. */
	assert_int_equal(notifyx_rm_watch(f->nx, inner), 0);
	tu_touch(tu_path(f->dir, "sub/deep/g"));
	TU_WAIT(&f->log, outer, NOTIFYX_CREATE, "sub/deep/g");
	assert_int_equal(notifyx_rm_watch(f->nx, outer), 0);
	tu_unlink(tu_path(f->dir, "sub/deep/g"));
	TU_WAIT(&f->log, third, NOTIFYX_DELETE, "g");
	tu_settle(&f->log);
	TU_ONCE(&f->log, outer, NOTIFYX_CREATE, "sub/deep/f", 0, 0);
	TU_ONCE(&f->log, inner, NOTIFYX_CREATE, "deep/f", 0, 0);
	TU_NONE(&f->log, inner, NOTIFYX_CREATE, "deep/g");
	TU_ONCE(&f->log, inner, NOTIFYX_IGNORED, "", 0, 0);
	TU_ONCE(&f->log, outer, NOTIFYX_IGNORED, "", 0, 0);
	TU_ONCE(&f->log, third, NOTIFYX_DELETE, "f", 0, 0);
	TU_ONCE(&f->log, third, NOTIFYX_DELETE, "g", 0, 0);
}

static void watch_bad_events_flags(void **state)
{
	struct tu_fix *f = F(state);
	uint32_t sup = notifyx_supported_events(f->nx);
	uint32_t badev[] = { 0, 0x2000, 0x8000, 0x80000000u, 0xffffffffu, NOTIFYX_OVERFLOW,
			     NOTIFYX_UNMOUNT, NOTIFYX_ERROR, NOTIFYX_IGNORED,
			     NOTIFYX_CREATE | NOTIFYX_IGNORED, NOTIFYX_CREATE | NOTIFYX_OVERFLOW,
			     NOTIFYX_CREATE | 0x100000 };
	uint32_t badfl[] = { 0x80, 0x100, 0x200, 0x80000000u, 0xffffffffu };
	size_t i;
	int wd;

	for (i = 0; i < sizeof badev / sizeof badev[0]; i++)
		TU_ERRNO(tu_fmt("add_watch events %#x", badev[i]),
			 notifyx_add_watch(f->nx, f->dir, badev[i], 0) == -1, EINVAL);
	for (i = 0; i < sizeof badfl / sizeof badfl[0]; i++)
		TU_ERRNO(tu_fmt("add_watch flags %#x", badfl[i]),
			 notifyx_add_watch(f->nx, f->dir, NOTIFYX_CREATE, badfl[i]) == -1, EINVAL);
	/* Every supported subset works. */
	wd = tu_add(&f->log, f->dir, sup, 0);
	assert_int_equal(notifyx_rm_watch(f->nx, wd), 0);
	for (i = 0; i < 13; i++) {
		uint32_t bit = 1u << i;

		if (sup & bit) {
			wd = tu_add(&f->log, f->dir, bit, 0);
			assert_int_equal(notifyx_rm_watch(f->nx, wd), 0);
		} else {
			TU_ERRNO(tu_fmt("add_watch with unsupported %s", tu_mask_str(bit)),
				 notifyx_add_watch(f->nx, f->dir, bit, 0) == -1, EOPNOTSUPP);
			TU_ERRNO(tu_fmt("add_watch with CREATE|unsupported %s", tu_mask_str(bit)),
				 notifyx_add_watch(f->nx, f->dir, bit | NOTIFYX_CREATE, 0) == -1,
				 EOPNOTSUPP);
		}
	}
	if (sup == NOTIFYX_ALL_EVENTS)
		print_message("  note: the %s backend supports every type: the EOPNOTSUPP part "
			      "has nothing to check\n", notifyx_backend_name(notifyx_backend(f->nx)));
	/* The handle still works. */
	wd = tu_add(&f->log, f->dir, NOTIFYX_CREATE, 0);
	tu_touch(tu_path(f->dir, "ok"));
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "ok");
}

static void watch_enotdir(void **state)
{
	struct tu_fix *f = F(state);
	const char *file = tu_path(f->dir, "file");
	uint32_t fl[] = { NOTIFYX_WATCH_RECURSIVE, NOTIFYX_WATCH_ONLYDIR, NOTIFYX_WATCH_LIST,
			  NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_LIST };
	size_t i;

	tu_touch(file);
	for (i = 0; i < sizeof fl / sizeof fl[0]; i++)
		TU_ERRNO(tu_fmt("add_watch on a file with flags %#x", fl[i]),
			 notifyx_add_watch(f->nx, file, NOTIFYX_CREATE | NOTIFYX_MODIFY, fl[i]) == -1,
			 ENOTDIR);
	/* ONLYDIR on a directory is fine. */
	tu_add(&f->log, f->dir, NOTIFYX_CREATE, NOTIFYX_WATCH_ONLYDIR);
	/* A symbolic link to a file with ONLYDIR: the target is not a directory. */
	tu_symlink("file", tu_path(f->dir, "ln"));
	TU_ERRNO("add_watch ONLYDIR on a link to a file",
		 notifyx_add_watch(f->nx, tu_path(f->dir, "ln"), NOTIFYX_CREATE,
				   NOTIFYX_WATCH_ONLYDIR) == -1, ENOTDIR);
}

static void watch_file(void **state)
{
	struct tu_fix *f = F(state);
	const char *file = tu_path(f->dir, "file");
	int wd;

	tu_write(file, "x");
	wd = tu_add(&f->log, file, NOTIFYX_MODIFY | NOTIFYX_ATTRIB, 0);
	tu_sleep_ms(20); /* a new mtime second is not needed: size changes too */
	tu_write(file, "more");
	TU_WAIT(&f->log, wd, NOTIFYX_MODIFY, "");
	assert_int_equal(chmod(file, 0600), 0);
	TU_WAIT(&f->log, wd, NOTIFYX_ATTRIB, "");
	/* A sibling changing is not this watch's business. */
	tu_write(tu_path(f->dir, "other"), "y");
	tu_settle(&f->log);
	{
		size_t i;

		for (i = 0; i < f->log.n; i++)
			if (f->log.ev[i].wd == wd && f->log.ev[i].path[0])
				fail_msg("a file watch reported path \"%s\" (expected \"\")",
					 f->log.ev[i].path);
	}
}

static void watch_nofollow(void **state)
{
	struct tu_fix *f = F(state);
	const char *target = tu_path(f->dir, "target");
	const char *ln = tu_path(f->dir, "ln");
	int follow, nofollow;

	tu_write(target, "x");
	tu_symlink("target", ln);
	follow = tu_add(&f->log, ln, NOTIFYX_MODIFY | NOTIFYX_ATTRIB, 0);
	nofollow = tu_add(&f->log, ln, NOTIFYX_MODIFY | NOTIFYX_ATTRIB, NOTIFYX_WATCH_NOFOLLOW);
	tu_write(target, "more");
	TU_WAIT(&f->log, follow, NOTIFYX_MODIFY, "");
	if (geteuid() == 0) {
		/* The link itself changes owner: only the NOFOLLOW watch sees it. */
		assert_int_equal(lchown(ln, 1, 1), 0);
		TU_WAIT(&f->log, nofollow, NOTIFYX_ATTRIB, "");
	} else {
		print_message("  note: not root: the link's own ATTRIB is not checked\n");
	}
	tu_settle(&f->log);
	TU_NONE(&f->log, nofollow, NOTIFYX_MODIFY, NULL);
	TU_NONE(&f->log, follow, NOTIFYX_ATTRIB, NULL);
	/* Without NOFOLLOW a dangling link is ENOENT; with it, the link is watched. */
	tu_symlink("nowhere", tu_path(f->dir, "dangling"));
	TU_ERRNO("add_watch on a dangling link without NOFOLLOW",
		 notifyx_add_watch(f->nx, tu_path(f->dir, "dangling"), NOTIFYX_ATTRIB, 0) == -1,
		 ENOENT);
	tu_add(&f->log, tu_path(f->dir, "dangling"), NOTIFYX_ATTRIB, NOTIFYX_WATCH_NOFOLLOW);
	/* A directory reached through a link with NOFOLLOW is not a directory. */
	tu_mkdir(tu_path(f->dir, "d"));
	tu_symlink("d", tu_path(f->dir, "dl"));
	TU_ERRNO("add_watch RECURSIVE|NOFOLLOW on a link to a directory",
		 notifyx_add_watch(f->nx, tu_path(f->dir, "dl"), NOTIFYX_CREATE,
				   NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_NOFOLLOW) == -1, ENOTDIR);
}

static void watch_symlinks_in_tree(void **state)
{
	struct tu_fix *f = F(state);
	char *outside = tu_mkdtemp();
	int wd;
	size_t i;

	tu_mkdir(tu_path(f->dir, "d"));
	tu_symlink(outside, tu_path(f->dir, "pre-out"));
	tu_symlink("d", tu_path(f->dir, "pre-in"));
	wd = tu_add(&f->log, f->dir, NOTIFYX_CREATE, NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_LIST);
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "pre-out");
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "pre-in");
	tu_symlink(outside, tu_path(f->dir, "out"));
	tu_symlink("d", tu_path(f->dir, "in"));
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "out");
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "in");
	tu_touch(tu_path(outside, "x"));
	tu_touch(tu_path(f->dir, "d/y"));
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "d/y");
	tu_settle(&f->log);
	for (i = 0; i < f->log.n; i++) {
		const struct tu_ev *e = &f->log.ev[i];

		if (e->wd != wd)
			continue;
		if (strstr(e->path, "out") == e->path || strstr(e->path, "pre-") == e->path ||
		    !strcmp(e->path, "in")) {
			if (strchr(e->path, '/')) {
				tu_dump(&f->log, "actual");
				fail_msg("event \"%s\": a symbolic link inside the tree was followed",
					 e->path);
			}
			if (e->flags & NOTIFYX_EVENT_ISDIR) {
				tu_dump(&f->log, "actual");
				fail_msg("symbolic link \"%s\" reported with ISDIR", e->path);
			}
		}
		if (!strncmp(e->path, "in/", 3)) {
			tu_dump(&f->log, "actual");
			fail_msg("event \"%s\" through a link", e->path);
		}
	}
	TU_ONCE(&f->log, wd, NOTIFYX_CREATE, "d/y", NOTIFYX_EVENT_ISDIR, 0);
	tu_rm_rf(outside);
	free(outside);
}

static void watch_path_rules(void **state)
{
	struct tu_fix *f = F(state);
	char passed[PATH_MAX];
	const char *p;
	int wd, rel;
	char cwd[PATH_MAX];

	tu_mkdir(tu_path(f->dir, "root"));
	snprintf(passed, sizeof passed, "%s//root/./", f->dir);
	wd = tu_add(&f->log, passed, NOTIFYX_CREATE | NOTIFYX_MOVE_SELF, 0);
	memset(passed, 'x', 10); /* the library keeps its own copy */
	p = notifyx_watch_path(f->nx, wd);
	TU_STREQ("notifyx_watch_path as passed", tu_fmt("%s//root/./", f->dir), p);
	/* A relative path stays relative. */
	assert_non_null(getcwd(cwd, sizeof cwd));
	assert_int_equal(chdir(f->dir), 0);
	rel = tu_add(&f->log, "root", NOTIFYX_CREATE, 0);
	assert_int_equal(chdir(cwd), 0);
	TU_STREQ("notifyx_watch_path of a relative path", "root", notifyx_watch_path(f->nx, rel));
	tu_touch(tu_path(f->dir, "root/f"));
	TU_WAIT(&f->log, rel, NOTIFYX_CREATE, "f");
	/* After MOVE_SELF: still the path as passed. */
	tu_rename(tu_path(f->dir, "root"), tu_path(f->dir, "moved"));
	TU_WAIT(&f->log, wd, NOTIFYX_MOVE_SELF, "");
	TU_STREQ("notifyx_watch_path after MOVE_SELF", tu_fmt("%s//root/./", f->dir),
		 notifyx_watch_path(f->nx, wd));
	tu_touch(tu_path(f->dir, "moved/g"));
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "g");
	/* After rm_watch, until IGNORED is read: same string, still valid. */
	p = notifyx_watch_path(f->nx, wd);
	assert_int_equal(notifyx_rm_watch(f->nx, wd), 0);
	TU_STREQ("notifyx_watch_path after rm_watch, before IGNORED is read",
		 tu_fmt("%s//root/./", f->dir), notifyx_watch_path(f->nx, wd));
	TU_STREQ("the string returned before rm_watch, before IGNORED is read",
		 tu_fmt("%s//root/./", f->dir), p);
	TU_WAIT(&f->log, wd, NOTIFYX_IGNORED, "");
	TU_ERRNO("notifyx_watch_path after IGNORED was read", notifyx_watch_path(f->nx, wd) == NULL,
		 EINVAL);
	TU_ERRNO("notifyx_watch_path(0)", notifyx_watch_path(f->nx, 0) == NULL, EINVAL);
	TU_ERRNO("notifyx_watch_path(-1)", notifyx_watch_path(f->nx, -1) == NULL, EINVAL);
	TU_ERRNO("notifyx_watch_path(unknown)", notifyx_watch_path(f->nx, 999999) == NULL, EINVAL);
}

static void watch_rm_twice(void **state)
{
	struct tu_fix *f = F(state);
	int wd = tu_add(&f->log, f->dir, NOTIFYX_CREATE, 0);

	assert_int_equal(notifyx_rm_watch(f->nx, wd), 0);
	TU_ERRNO("second rm_watch (before IGNORED is read)", notifyx_rm_watch(f->nx, wd) == -1,
		 EINVAL);
	TU_WAIT(&f->log, wd, NOTIFYX_IGNORED, "");
	TU_ERRNO("third rm_watch (after IGNORED)", notifyx_rm_watch(f->nx, wd) == -1, EINVAL);
}

static void watch_rm_after_end(void **state)
{
	struct tu_fix *f = F(state);
	const char *root = tu_path(f->dir, "root");
	int del, one;

	tu_mkdir(root);
	del = tu_add(&f->log, root, NOTIFYX_CREATE, 0);
	one = tu_add(&f->log, f->dir, NOTIFYX_CREATE, NOTIFYX_WATCH_ONESHOT);
	tu_rmdir(root);
	tu_touch(tu_path(f->dir, "fire"));
	TU_WAIT(&f->log, del, NOTIFYX_IGNORED, "");
	TU_WAIT(&f->log, one, NOTIFYX_IGNORED, "");
	TU_ERRNO("rm_watch after the root was deleted", notifyx_rm_watch(f->nx, del) == -1, EINVAL);
	TU_ERRNO("rm_watch after a ONESHOT watch fired", notifyx_rm_watch(f->nx, one) == -1, EINVAL);
}

/* ---- exclude ---- */

static void exclude_name(void **state)
{
	struct tu_fix *f = F(state);
	int wd;

	assert_int_equal(notifyx_exclude(f->nx, "*.tmp"), 0);
	wd = tu_add(&f->log, f->dir, NOTIFYX_CREATE, NOTIFYX_WATCH_RECURSIVE);
	tu_touch(tu_path(f->dir, "a.tmp"));
	tu_touch(tu_path(f->dir, "a.txt"));
	tu_mkdir(tu_path(f->dir, "sub"));
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "sub");
	tu_touch(tu_path(f->dir, "sub/b.tmp"));
	tu_touch(tu_path(f->dir, "sub/b.txt"));
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "sub/b.txt");
	tu_settle(&f->log);
	TU_ONCE(&f->log, wd, NOTIFYX_CREATE, "a.txt", 0, 0);
	TU_NONE(&f->log, wd, 0, "a.tmp");
	TU_NONE(&f->log, wd, 0, "sub/b.tmp");
}

static void exclude_slash(void **state)
{
	struct tu_fix *f = F(state);
	int wd;

	tu_mkdir(tu_path(f->dir, "sub"));
	tu_mkdir(tu_path(f->dir, "sub/deeper"));
	assert_int_equal(notifyx_exclude(f->nx, "sub/*.o"), 0);
	wd = tu_add(&f->log, f->dir, NOTIFYX_CREATE, NOTIFYX_WATCH_RECURSIVE);
	tu_touch(tu_path(f->dir, "sub/x.o"));
	tu_touch(tu_path(f->dir, "sub/deeper/y.o")); /* '*' does not match '/' (FNM_PATHNAME) */
	tu_touch(tu_path(f->dir, "z.o"));
	tu_touch(tu_path(f->dir, "sub/x.c"));
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "sub/x.c");
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "sub/deeper/y.o");
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "z.o");
	tu_settle(&f->log);
	TU_NONE(&f->log, wd, 0, "sub/x.o");
	TU_ONCE(&f->log, wd, NOTIFYX_CREATE, "sub/deeper/y.o", 0, 0);
}

static void exclude_dir_not_entered(void **state)
{
	struct tu_fix *f = F(state);
	int wd;
	size_t i;

	tu_mkdir(tu_path(f->dir, "skip"));
	tu_mkdir(tu_path(f->dir, "skip/in"));
	tu_mkdir(tu_path(f->dir, "keep"));
	assert_int_equal(notifyx_exclude(f->nx, "skip"), 0);
	assert_int_equal(notifyx_exclude(f->nx, "later"), 0);
	wd = tu_add(&f->log, f->dir, NOTIFYX_CREATE | NOTIFYX_DELETE,
		    NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_LIST);
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "keep");
	tu_touch(tu_path(f->dir, "skip/f"));
	tu_touch(tu_path(f->dir, "skip/in/g"));
	tu_mkdir(tu_path(f->dir, "later"));
	tu_touch(tu_path(f->dir, "later/h"));
	tu_touch(tu_path(f->dir, "keep/k"));
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "keep/k");
	tu_rm_rf(tu_path(f->dir, "skip"));
	tu_settle(&f->log);
	for (i = 0; i < f->log.n; i++)
		if (!strncmp(f->log.ev[i].path, "skip", 4) || !strncmp(f->log.ev[i].path, "later", 5)) {
			tu_dump(&f->log, "actual");
			fail_msg("event for excluded \"%s\"", f->log.ev[i].path);
		}
}

static void exclude_only_later_watches(void **state)
{
	struct tu_fix *f = F(state);
	int before, after;

	before = tu_add(&f->log, f->dir, NOTIFYX_CREATE, 0);
	assert_int_equal(notifyx_exclude(f->nx, "*.tmp"), 0);
	after = tu_add(&f->log, f->dir, NOTIFYX_CREATE, 0);
	tu_touch(tu_path(f->dir, "a.tmp"));
	tu_touch(tu_path(f->dir, "b"));
	TU_WAIT(&f->log, before, NOTIFYX_CREATE, "a.tmp");
	TU_WAIT(&f->log, after, NOTIFYX_CREATE, "b");
	tu_settle(&f->log);
	TU_NONE(&f->log, after, 0, "a.tmp");
	TU_ONCE(&f->log, before, NOTIFYX_CREATE, "b", 0, 0);
}

/* ---- LIST ---- */

static void list_tree(void **state)
{
	struct tu_fix *f = F(state);
	static const char *const dirs[] = { "a", "a/b", "a/b/c", "e" };
	static const char *const files[] = { "a/b/c/f", "a/g", "top" };
	int wd, flat;
	size_t i;

	for (i = 0; i < 4; i++)
		tu_mkdir(tu_path(f->dir, dirs[i]));
	for (i = 0; i < 3; i++)
		tu_touch(tu_path(f->dir, files[i]));
	wd = tu_add(&f->log, f->dir, NOTIFYX_CREATE, NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_LIST);
	flat = tu_add(&f->log, f->dir, NOTIFYX_CREATE, NOTIFYX_WATCH_LIST);
	tu_settle(&f->log);
	for (i = 0; i < 4; i++)
		TU_ONCE(&f->log, wd, NOTIFYX_CREATE, dirs[i],
			NOTIFYX_EVENT_SYNTHETIC | NOTIFYX_EVENT_ISDIR,
			NOTIFYX_EVENT_SYNTHETIC | NOTIFYX_EVENT_ISDIR);
	for (i = 0; i < 3; i++)
		TU_ONCE(&f->log, wd, NOTIFYX_CREATE, files[i],
			NOTIFYX_EVENT_SYNTHETIC | NOTIFYX_EVENT_ISDIR, NOTIFYX_EVENT_SYNTHETIC);
	TU_BEFORE(&f->log, tu_find(&f->log, 0, wd, NOTIFYX_CREATE, "a"),
		  tu_find(&f->log, 0, wd, NOTIFYX_CREATE, "a/b"), "parent a before a/b");
	TU_BEFORE(&f->log, tu_find(&f->log, 0, wd, NOTIFYX_CREATE, "a/b"),
		  tu_find(&f->log, 0, wd, NOTIFYX_CREATE, "a/b/c"), "parent a/b before a/b/c");
	TU_BEFORE(&f->log, tu_find(&f->log, 0, wd, NOTIFYX_CREATE, "a/b/c"),
		  tu_find(&f->log, 0, wd, NOTIFYX_CREATE, "a/b/c/f"), "parent a/b/c before a/b/c/f");
	TU_BEFORE(&f->log, tu_find(&f->log, 0, wd, NOTIFYX_CREATE, "a"),
		  tu_find(&f->log, 0, wd, NOTIFYX_CREATE, "a/g"), "parent a before a/g");
	/* One SYNC once the listing is complete, after every CREATE of it. */
	TU_BEFORE(&f->log, tu_find(&f->log, 0, wd, NOTIFYX_CREATE, "a/b/c/f"),
		  TU_ONCE(&f->log, wd, NOTIFYX_SYNC, "", 0, 0), "the listing before its SYNC");
	TU_BEFORE(&f->log, tu_find(&f->log, 0, wd, NOTIFYX_CREATE, "top"),
		  tu_find(&f->log, 0, wd, NOTIFYX_SYNC, ""), "the listing before its SYNC");
	TU_EQ("events of the recursive LIST watch", 8, tu_count_wd(&f->log, wd));
	/* Non-recursive: the directory's own entries only. */
	TU_ONCE(&f->log, flat, NOTIFYX_CREATE, "a", NOTIFYX_EVENT_SYNTHETIC | NOTIFYX_EVENT_ISDIR,
		NOTIFYX_EVENT_SYNTHETIC | NOTIFYX_EVENT_ISDIR);
	TU_ONCE(&f->log, flat, NOTIFYX_CREATE, "e", NOTIFYX_EVENT_SYNTHETIC | NOTIFYX_EVENT_ISDIR,
		NOTIFYX_EVENT_SYNTHETIC | NOTIFYX_EVENT_ISDIR);
	TU_ONCE(&f->log, flat, NOTIFYX_CREATE, "top", NOTIFYX_EVENT_SYNTHETIC | NOTIFYX_EVENT_ISDIR,
		NOTIFYX_EVENT_SYNTHETIC);
	TU_ONCE(&f->log, flat, NOTIFYX_SYNC, "", 0, 0);
	TU_EQ("events of the flat LIST watch", 4, tu_count_wd(&f->log, flat));
	/* A later creation is an ordinary one, reported once. */
	tu_touch(tu_path(f->dir, "a/b/new"));
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "a/b/new");
	tu_settle(&f->log);
	TU_ONCE(&f->log, wd, NOTIFYX_CREATE, "a/b/new", 0, 0);
	if (!f->log.scanning)
		TU_ONCE(&f->log, wd, NOTIFYX_CREATE, "a/b/new", NOTIFYX_EVENT_SYNTHETIC, 0);
}

static void list_args(void **state)
{
	struct tu_fix *f = F(state);

	tu_touch(tu_path(f->dir, "file"));
	TU_ERRNO("LIST without CREATE",
		 notifyx_add_watch(f->nx, f->dir, NOTIFYX_DELETE | NOTIFYX_MODIFY,
				   NOTIFYX_WATCH_LIST) == -1, EINVAL);
	TU_ERRNO("LIST|RECURSIVE without CREATE",
		 notifyx_add_watch(f->nx, f->dir, NOTIFYX_MOVED_IN,
				   NOTIFYX_WATCH_LIST | NOTIFYX_WATCH_RECURSIVE) == -1, EINVAL);
	TU_ERRNO("LIST with ONESHOT",
		 notifyx_add_watch(f->nx, f->dir, NOTIFYX_CREATE,
				   NOTIFYX_WATCH_LIST | NOTIFYX_WATCH_ONESHOT) == -1, EINVAL);
	TU_ERRNO("LIST on a file",
		 notifyx_add_watch(f->nx, tu_path(f->dir, "file"), NOTIFYX_CREATE,
				   NOTIFYX_WATCH_LIST) == -1, ENOTDIR);
	TU_ERRNO("SYNC requested",
		 notifyx_add_watch(f->nx, f->dir, NOTIFYX_CREATE | NOTIFYX_SYNC,
				   NOTIFYX_WATCH_LIST) == -1, EINVAL);
}

/* SYNC: once after the initial listing, even of an empty tree; never for a
 * watch without LIST. */
static void list_sync(void **state)
{
	struct tu_fix *f = F(state);
	int empty, plain, wd;

	empty = tu_add(&f->log, f->dir, NOTIFYX_CREATE, NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_LIST);
	plain = tu_add(&f->log, f->dir, NOTIFYX_CREATE, NOTIFYX_WATCH_RECURSIVE);
	TU_WAIT(&f->log, empty, NOTIFYX_SYNC, "");
	tu_mkdir(tu_path(f->dir, "d"));
	tu_touch(tu_path(f->dir, "d/f"));
	TU_WAIT(&f->log, plain, NOTIFYX_CREATE, "d/f");
	TU_WAIT(&f->log, empty, NOTIFYX_CREATE, "d/f");
	wd = tu_add(&f->log, f->dir, NOTIFYX_CREATE, NOTIFYX_WATCH_LIST);
	TU_WAIT(&f->log, wd, NOTIFYX_SYNC, "");
	tu_settle(&f->log);
	TU_ONCE(&f->log, empty, NOTIFYX_SYNC, "", 0, 0);
	TU_NONE(&f->log, plain, NOTIFYX_SYNC, TU_ANY_PATH);
	TU_BEFORE(&f->log, TU_ONCE(&f->log, wd, NOTIFYX_CREATE, "d", 0, 0),
		  TU_ONCE(&f->log, wd, NOTIFYX_SYNC, "", 0, 0), "the listing before its SYNC");
	TU_EQ("events of the flat LIST watch", 2, tu_count_wd(&f->log, wd));
}

static void list_moved_in(void **state)
{
	struct tu_fix *f = F(state);
	char *outside = tu_mkdtemp();
	int wd;

	tu_mkdir(tu_path(outside, "m"));
	tu_mkdir(tu_path(outside, "m/n"));
	tu_touch(tu_path(outside, "m/n/f"));
	tu_touch(tu_path(outside, "m/g"));
	wd = tu_add(&f->log, f->dir, NOTIFYX_CREATE | NOTIFYX_MOVED_IN,
		    NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_LIST);
	tu_settle(&f->log);
	TU_EQ("events of a LIST watch on an empty directory (its SYNC)", 1, tu_count_wd(&f->log, wd));
	TU_ONCE(&f->log, wd, NOTIFYX_SYNC, "", 0, 0);
	tu_rename(tu_path(outside, "m"), tu_path(f->dir, "m"));
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "m/n/f");
	tu_settle(&f->log);
	if (f->log.scanning)
		TU_ONCE(&f->log, wd, NOTIFYX_CREATE, "m", NOTIFYX_EVENT_ISDIR, NOTIFYX_EVENT_ISDIR);
	else
		TU_ONCE(&f->log, wd, NOTIFYX_MOVED_IN, "m", NOTIFYX_EVENT_ISDIR | NOTIFYX_EVENT_SYNTHETIC,
			NOTIFYX_EVENT_ISDIR);
	TU_ONCE(&f->log, wd, NOTIFYX_CREATE, "m/n", NOTIFYX_EVENT_ISDIR | NOTIFYX_EVENT_SYNTHETIC,
		NOTIFYX_EVENT_ISDIR | NOTIFYX_EVENT_SYNTHETIC);
	TU_ONCE(&f->log, wd, NOTIFYX_CREATE, "m/n/f", NOTIFYX_EVENT_ISDIR | NOTIFYX_EVENT_SYNTHETIC,
		NOTIFYX_EVENT_SYNTHETIC);
	TU_ONCE(&f->log, wd, NOTIFYX_CREATE, "m/g", NOTIFYX_EVENT_ISDIR | NOTIFYX_EVENT_SYNTHETIC,
		NOTIFYX_EVENT_SYNTHETIC);
	TU_BEFORE(&f->log, tu_find(&f->log, 0, wd, NOTIFYX_CREATE | NOTIFYX_MOVED_IN, "m"),
		  tu_find(&f->log, 0, wd, NOTIFYX_CREATE, "m/n"), "m before m/n");
	TU_BEFORE(&f->log, tu_find(&f->log, 0, wd, NOTIFYX_CREATE, "m/n"),
		  tu_find(&f->log, 0, wd, NOTIFYX_CREATE, "m/n/f"), "m/n before m/n/f");
	tu_rm_rf(outside);
	free(outside);
}

/* ---- read ---- */

static void read_len_and_small_buffer(void **state)
{
	struct tu_fix *f = F(state);
	union {
		struct notifyx_event ev;
		char b[2 * NOTIFYX_EVENT_MAX];
	} buf;
	int wd = tu_add(&f->log, f->dir, NOTIFYX_CREATE, 0);
	uint32_t first;
	ssize_t r;
	struct pollfd p = { .fd = notifyx_fd(f->nx), .events = POLLIN };

	TU_ERRNO("notifyx_read len 0 (empty queue)", notifyx_read(f->nx, buf.b, 0) == -1, EINVAL);
	tu_touch(tu_path(f->dir, "a-rather-long-name-for-the-first-event"));
	tu_touch(tu_path(f->dir, "b"));
	assert_int_equal(poll(&p, 1, TU_WAIT_MS), 1);
	TU_ERRNO("notifyx_read len 0 (events pending)", notifyx_read(f->nx, buf.b, 0) == -1, EINVAL);
	TU_ERRNO("notifyx_read len 1", notifyx_read(f->nx, buf.b, 1) == -1, EINVAL);
	TU_ERRNO("notifyx_read len = header only",
		 notifyx_read(f->nx, buf.b, sizeof(struct notifyx_event)) == -1, EINVAL);
	/* Nothing was consumed: a big enough buffer gets the first event. */
	r = notifyx_read(f->nx, buf.b, sizeof buf.b);
	assert_true(r > 0);
	first = buf.ev.size;
	TU_STREQ("first event after failed small reads", "a-rather-long-name-for-the-first-event",
		 buf.ev.names);
	(void)wd;
	/* Two events again: len = first's size - 1 fails, = its size returns exactly it. */
	tu_unlink(tu_path(f->dir, "b"));
	tu_unlink(tu_path(f->dir, "a-rather-long-name-for-the-first-event"));
	tu_touch(tu_path(f->dir, "a-rather-long-name-for-the-first-event"));
	tu_touch(tu_path(f->dir, "b"));
	assert_int_equal(poll(&p, 1, TU_WAIT_MS), 1);
	tu_sleep_ms(50);
	TU_ERRNO("notifyx_read len = next event's size - 1",
		 notifyx_read(f->nx, buf.b, first - 1) == -1, EINVAL);
	r = notifyx_read(f->nx, buf.b, first);
	TU_EQ("notifyx_read with len = next event's size: returns exactly it", first, r);
	/* First + a few bytes: only whole events. */
	r = notifyx_read(f->nx, buf.b, first + 16);
	assert_true(r > 0);
	assert_true(r <= (ssize_t)first + 16);
	assert_int_equal(r % 8, 0);
	{
		/* r holds whole records only. */
		size_t off = 0;

		while (off < (size_t)r) {
			const struct notifyx_event *ev = (const void *)(buf.b + off);

			assert_true(ev->size >= sizeof *ev && off + ev->size <= (size_t)r);
			off += ev->size;
		}
	}
	tu_pull(&f->log);
}

static void read_nonblock_empty(void **state)
{
	struct tu_fix *f = F(state);
	char buf[NOTIFYX_EVENT_MAX];

	TU_ERRNO("non-blocking read, no watch", notifyx_read(f->nx, buf, sizeof buf) == -1, EAGAIN);
	tu_add(&f->log, f->dir, NOTIFYX_CREATE, 0);
	TU_ERRNO("non-blocking read, nothing happened", notifyx_read(f->nx, buf, sizeof buf) == -1,
		 EAGAIN);
	tu_touch(tu_path(f->dir, "f"));
	TU_WAIT(&f->log, TU_ANY_WD, NOTIFYX_CREATE, "f");
	tu_settle(&f->log);
	TU_ERRNO("non-blocking read, all read", notifyx_read(f->nx, buf, sizeof buf) == -1, EAGAIN);
}

static volatile sig_atomic_t got_signal;
static void on_alarm(int sig)
{
	(void)sig;
	got_signal = 1;
}

struct rescue {
	const char *path;
	volatile int done;
	long delay_ms; /* 0: 3000 */
};

/* Bounds a read that fails to end: makes an event after 3 s (delay_ms). */
static void *rescue_thread(void *arg)
{
	struct rescue *r = arg;
	long end = tu_now_ms() + (r->delay_ms ? r->delay_ms : 3000);

	while (!r->done && tu_now_ms() < end)
		tu_sleep_ms(10);
	if (!r->done) {
		int fd = open(r->path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);

		if (fd >= 0)
			close(fd);
	}
	return NULL;
}

static void read_eintr_one(struct tu_fix *f, int sa_flags, const char *how)
{
	struct notifyx *nx = tu_open(0, 0);
	struct sigaction sa, old;
	struct itimerval it = { { 0, 0 }, { 0, 100000 } };
	char buf[NOTIFYX_EVENT_MAX];
	struct rescue rs = { tu_path(f->dir, tu_fmt("rescue-%d", sa_flags)), 0, 0 };
	pthread_t th;
	ssize_t r;
	int err;
	long t0;

	assert_non_null(nx);
	assert_true(notifyx_add_watch(nx, f->dir, NOTIFYX_CREATE, 0) > 0);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_alarm;
	sa.sa_flags = sa_flags;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGALRM, &sa, &old), 0);
	got_signal = 0;
	assert_int_equal(pthread_create(&th, NULL, rescue_thread, &rs), 0);
	/* The rescue thread must not take the signal. */
	{
		sigset_t s;

		sigemptyset(&s);
		sigaddset(&s, SIGALRM);
		pthread_sigmask(SIG_UNBLOCK, &s, NULL);
	}
	t0 = tu_now_ms();
	setitimer(ITIMER_REAL, &it, NULL);
	r = notifyx_read(nx, buf, sizeof buf);
	err = errno;
	rs.done = 1;
	pthread_join(th, NULL);
	sigaction(SIGALRM, &old, NULL);
	notifyx_close(nx);
	if (r != -1 || err != EINTR)
		fail_msg("blocking read interrupted by a caught signal (%s): expected -1 EINTR, "
			 "actual %zd errno %s after %ld ms (signal caught: %d)", how, r,
			 r < 0 ? strerrorname_np(err) : "-", tu_now_ms() - t0, (int)got_signal);
	assert_true(got_signal);
}

static void read_eintr(void **state)
{
	struct tu_fix *f = F(state);
	sigset_t s;

	/* The rescue thread blocks SIGALRM so that the reading thread takes it. */
	sigemptyset(&s);
	sigaddset(&s, SIGALRM);
	pthread_sigmask(SIG_BLOCK, &s, NULL);
	read_eintr_one(f, 0, "without SA_RESTART");
	pthread_sigmask(SIG_BLOCK, &s, NULL);
	read_eintr_one(f, SA_RESTART, "with SA_RESTART");
	pthread_sigmask(SIG_UNBLOCK, &s, NULL);
}

/* 0.2: O_NONBLOCK set on notifyx_fd by the application (libuv's uv_poll_init
 * does) makes a blocking handle's reads non-blocking, and clearing it makes
 * them block again. */
static void read_fd_nonblock(void **state)
{
	struct tu_fix *f = F(state);
	struct notifyx *nx = tu_open(0, 0);
	union {
		struct notifyx_event ev;
		char b[NOTIFYX_EVENT_MAX];
	} buf;
	struct rescue rs = { tu_path(f->dir, "rescue"), 0, 0 };
	pthread_t th;
	ssize_t r;
	int fd, fl, err;

	assert_non_null(nx);
	assert_true(notifyx_add_watch(nx, f->dir, NOTIFYX_CREATE, 0) > 0);
	fd = notifyx_fd(nx);
	fl = fcntl(fd, F_GETFL);
	assert_true(fl >= 0);
	assert_int_equal(fcntl(fd, F_SETFL, fl | O_NONBLOCK), 0);
	/* Without the rule the read waits until the thread makes a file. */
	assert_int_equal(pthread_create(&th, NULL, rescue_thread, &rs), 0);
	r = notifyx_read(nx, buf.b, sizeof buf.b);
	err = errno;
	rs.done = 1;
	pthread_join(th, NULL);
	if (r != -1 || err != EAGAIN)
		fail_msg("blocking handle, O_NONBLOCK on its descriptor, nothing happened: expected "
			 "-1 EAGAIN, actual %zd errno %s", r, r < 0 ? strerrorname_np(err) : "-");
	tu_touch(tu_path(f->dir, "f"));
	/* Events still come (poll, as an event loop would, then read). */
	{
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		long end = tu_now_ms() + TU_WAIT_MS;

		do {
			(void)poll(&pfd, 1, 100);
			r = notifyx_read(nx, buf.b, sizeof buf.b);
		} while (r < 0 && errno == EAGAIN && tu_now_ms() < end);
	}
	if (r <= 0)
		fail_msg("O_NONBLOCK on the descriptor: no event read (%s)", strerrorname_np(errno));
	TU_STREQ("O_NONBLOCK on the descriptor, first event", "f", buf.ev.names);
	/* Cleared again: the read waits for the thread's file. */
	assert_int_equal(fcntl(fd, F_SETFL, fl), 0);
	rs.path = tu_path(f->dir, "made-by-thread");
	rs.done = 0;
	rs.delay_ms = 200;
	assert_int_equal(pthread_create(&th, NULL, rescue_thread, &rs), 0);
	r = notifyx_read(nx, buf.b, sizeof buf.b);
	err = errno;
	rs.done = 1;
	pthread_join(th, NULL);
	if (r <= 0)
		fail_msg("O_NONBLOCK cleared: expected a blocking read to return the thread's "
			 "event, actual %zd errno %s", r, strerrorname_np(err));
	TU_STREQ("O_NONBLOCK cleared, blocking read", "made-by-thread", buf.ev.names);
	notifyx_close(nx);
}

static void read_blocking_gets_events(void **state)
{
	struct tu_fix *f = F(state);
	struct notifyx *nx = tu_open(0, 0);
	union {
		struct notifyx_event ev;
		char b[NOTIFYX_EVENT_MAX];
	} buf;
	struct rescue rs = { tu_path(f->dir, "made-by-thread"), 0, 0 };
	pthread_t th;
	ssize_t r;

	assert_non_null(nx);
	assert_true(notifyx_add_watch(nx, f->dir, NOTIFYX_CREATE, 0) > 0);
	/* The thread creates a file after a while; the blocking read returns it. */
	assert_int_equal(pthread_create(&th, NULL, rescue_thread, &rs), 0);
	r = notifyx_read(nx, buf.b, sizeof buf.b);
	pthread_join(th, NULL);
	assert_true(r > 0);
	TU_STREQ("blocking read", "made-by-thread", buf.ev.names);
	notifyx_close(nx);
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
		cmocka_unit_test(config_size),
		cmocka_unit_test(config_flags_backend),
		cmocka_unit_test_setup_teardown(config_env, env_setup, env_teardown),
		cmocka_unit_test_setup_teardown(config_null_and_backend, env_setup, env_teardown),
		cmocka_unit_test(names),
		cmocka_unit_test_setup_teardown(watch_wd_never_reused, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(watch_same_path_twice, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(watch_overlapping_recursive, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(watch_bad_events_flags, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(watch_enotdir, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(watch_file, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(watch_nofollow, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(watch_symlinks_in_tree, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(watch_path_rules, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(watch_rm_twice, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(watch_rm_after_end, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(exclude_name, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(exclude_slash, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(exclude_dir_not_entered, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(exclude_only_later_watches, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(list_tree, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(list_sync, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(list_args, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(list_moved_in, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(read_len_and_small_buffer, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(read_nonblock_empty, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(read_eintr, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(read_fd_nonblock, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(read_blocking_gets_events, tu_setup, tu_teardown),
	};

	/* As root: filesystem marks, whatever the size of the tree (the
	 * library's policy takes inode marks for small trees; see fanotify-repair.c). */
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
	 * (cmocka's wildcards), to run one case by hand. */
	if (getenv("CONFORMANCE_FILTER"))
		cmocka_set_test_filter(getenv("CONFORMANCE_FILTER"));
	failed = cmocka_run_group_tests_name(tu_fmt("conformance (%s)", name), tests, NULL, NULL);
	failed += conf_events_run();
	failed += conf_process_run();
	failed += conf_edges_run();
	failed += conf_hold_run();
	failed += conf_rescan_run();
	tu_watches_restore();
	return failed ? 1 : 0;
}
