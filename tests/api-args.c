/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Every public function with bad arguments (API.md): NULL handle, path or
 * pattern, unknown bits, wrong sizes, small buffers, bad wds, missing and
 * empty paths.  After each failure the handle still works: a later
 * add_watch and read give the expected events.  argv[1] names the backend
 * (none: AUTO); exit 77 when it cannot start.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

#define F(state) ((struct tu_fix *)*(state))

/* The handle still works: a new watch on a new directory sees a creation. */
static void still_works(struct tu_fix *f, const char *after)
{
	static int n;
	char d[PATH_MAX];
	int wd;

	snprintf(d, sizeof d, "%s/ok%d", f->dir, n++);
	tu_mkdir(d);
	wd = notifyx_add_watch(f->nx, d, NOTIFYX_CREATE, 0);
	if (wd <= 0)
		fail_msg("after %s: add_watch failed: %s", after, strerrorname_np(errno));
	tu_track(&f->log, wd, NOTIFYX_CREATE, 0);
	tu_touch(tu_path(d, "x"));
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "x");
}

static void null_handle(void **state)
{
	char buf[NOTIFYX_EVENT_MAX];

	(void)state;
	TU_EQ("notifyx_close(NULL)", 0, notifyx_close(NULL));
	TU_EQ("notifyx_backend(NULL)", 0, notifyx_backend(NULL));
	TU_EQ("notifyx_supported_events(NULL)", 0, notifyx_supported_events(NULL));
	TU_ERRNO("notifyx_fd(NULL)", notifyx_fd(NULL) == -1, EINVAL);
	TU_ERRNO("notifyx_add_watch(NULL)", notifyx_add_watch(NULL, "/tmp", NOTIFYX_CREATE, 0) == -1,
		 EINVAL);
	TU_ERRNO("notifyx_rm_watch(NULL)", notifyx_rm_watch(NULL, 1) == -1, EINVAL);
	TU_ERRNO("notifyx_exclude(NULL)", notifyx_exclude(NULL, "*.o") == -1, EINVAL);
	TU_ERRNO("notifyx_read(NULL)", notifyx_read(NULL, buf, sizeof buf) == -1, EINVAL);
	TU_ERRNO("notifyx_watch_path(NULL)", notifyx_watch_path(NULL, 1) == NULL, EINVAL);
}

static void open_bad_config(void **state)
{
	struct {
		struct notifyx_config c;
		uint64_t tail;
	} big;
	struct notifyx_config c;

	(void)state;
	memset(&c, 0, sizeof c);
	c.backend = tu_backend;
	TU_ERRNO("notifyx_open size 0", notifyx_open(&c) == NULL, EINVAL);
	c.size = sizeof c - 4;
	TU_ERRNO("notifyx_open size 20", notifyx_open(&c) == NULL, EINVAL);
	c.size = sizeof c;
	c.flags = 2;
	TU_ERRNO("notifyx_open flags 2", notifyx_open(&c) == NULL, EINVAL);
	c.flags = 0;
	c.backend = 5;
	TU_ERRNO("notifyx_open backend 5", notifyx_open(&c) == NULL, EINVAL);
	memset(&big, 0, sizeof big);
	big.c.size = sizeof big;
	big.c.backend = tu_backend;
	big.tail = 1ull << 60;
	TU_ERRNO("notifyx_open larger size, non-zero tail", notifyx_open(&big.c) == NULL, E2BIG);
}

static void add_watch_args(void **state)
{
	struct tu_fix *f = F(state);
	const char *file = tu_path(f->dir, "file");

	tu_touch(file);
	TU_ERRNO("add_watch NULL path", notifyx_add_watch(f->nx, NULL, NOTIFYX_CREATE, 0) == -1,
		 EINVAL);
	still_works(f, "NULL path");
	TU_ERRNO("add_watch events 0", notifyx_add_watch(f->nx, f->dir, 0, 0) == -1, EINVAL);
	TU_ERRNO("add_watch unknown event bit", notifyx_add_watch(f->nx, f->dir, 0x4000, 0) == -1,
		 EINVAL);
	TU_ERRNO("add_watch IGNORED", notifyx_add_watch(f->nx, f->dir, NOTIFYX_IGNORED, 0) == -1,
		 EINVAL);
	TU_ERRNO("add_watch CREATE|OVERFLOW",
		 notifyx_add_watch(f->nx, f->dir, NOTIFYX_CREATE | NOTIFYX_OVERFLOW, 0) == -1, EINVAL);
	still_works(f, "bad events");
	TU_ERRNO("add_watch unknown flag",
		 notifyx_add_watch(f->nx, f->dir, NOTIFYX_CREATE, 0x80) == -1, EINVAL);
	TU_ERRNO("add_watch all flags",
		 notifyx_add_watch(f->nx, f->dir, NOTIFYX_CREATE, 0xffffffffu) == -1, EINVAL);
	still_works(f, "bad flags");
	TU_ERRNO("add_watch nonexistent path",
		 notifyx_add_watch(f->nx, tu_path(f->dir, "missing"), NOTIFYX_CREATE, 0) == -1, ENOENT);
	TU_ERRNO("add_watch nonexistent parent",
		 notifyx_add_watch(f->nx, tu_path(f->dir, "missing/x"), NOTIFYX_CREATE,
				   NOTIFYX_WATCH_RECURSIVE) == -1, ENOENT);
	TU_ERRNO("add_watch empty path", notifyx_add_watch(f->nx, "", NOTIFYX_CREATE, 0) == -1,
		 ENOENT);
	still_works(f, "missing paths");
	TU_ERRNO("add_watch path through a file",
		 notifyx_add_watch(f->nx, tu_path(f->dir, "file/x"), NOTIFYX_CREATE, 0) == -1, ENOTDIR);
	TU_ERRNO("add_watch RECURSIVE on a file",
		 notifyx_add_watch(f->nx, file, NOTIFYX_CREATE, NOTIFYX_WATCH_RECURSIVE) == -1, ENOTDIR);
	TU_ERRNO("add_watch LIST without CREATE",
		 notifyx_add_watch(f->nx, f->dir, NOTIFYX_DELETE, NOTIFYX_WATCH_LIST) == -1, EINVAL);
	TU_ERRNO("add_watch LIST|ONESHOT",
		 notifyx_add_watch(f->nx, f->dir, NOTIFYX_CREATE,
				   NOTIFYX_WATCH_LIST | NOTIFYX_WATCH_ONESHOT) == -1, EINVAL);
	{
		char longp[PATH_MAX + 16];

		memset(longp, 'a', sizeof longp - 1);
		longp[0] = '/';
		longp[sizeof longp - 1] = 0;
		TU_ERRNO("add_watch path longer than PATH_MAX",
			 notifyx_add_watch(f->nx, longp, NOTIFYX_CREATE, 0) == -1, ENAMETOOLONG);
	}
	still_works(f, "ENOTDIR/LIST/ENAMETOOLONG");
	{
		uint32_t unsup = NOTIFYX_ALL_EVENTS & ~notifyx_supported_events(f->nx);

		if (unsup) {
			TU_ERRNO("add_watch unsupported event",
				 notifyx_add_watch(f->nx, f->dir, unsup, 0) == -1, EOPNOTSUPP);
			still_works(f, "EOPNOTSUPP");
		}
	}
}

static void rm_watch_args(void **state)
{
	struct tu_fix *f = F(state);
	int wd;

	TU_ERRNO("rm_watch 0", notifyx_rm_watch(f->nx, 0) == -1, EINVAL);
	TU_ERRNO("rm_watch -1", notifyx_rm_watch(f->nx, -1) == -1, EINVAL);
	TU_ERRNO("rm_watch INT_MIN", notifyx_rm_watch(f->nx, INT32_MIN) == -1, EINVAL);
	TU_ERRNO("rm_watch never returned", notifyx_rm_watch(f->nx, 12345) == -1, EINVAL);
	wd = tu_add(&f->log, f->dir, NOTIFYX_CREATE, 0);
	TU_ERRNO("rm_watch wd+1 (not yet returned)", notifyx_rm_watch(f->nx, wd + 1) == -1, EINVAL);
	assert_int_equal(notifyx_rm_watch(f->nx, wd), 0);
	TU_ERRNO("rm_watch removed wd", notifyx_rm_watch(f->nx, wd) == -1, EINVAL);
	TU_WAIT(&f->log, wd, NOTIFYX_IGNORED, "");
	TU_ERRNO("rm_watch removed wd after IGNORED", notifyx_rm_watch(f->nx, wd) == -1, EINVAL);
	still_works(f, "bad rm_watch");
	TU_ERRNO("watch_path 0", notifyx_watch_path(f->nx, 0) == NULL, EINVAL);
	TU_ERRNO("watch_path -5", notifyx_watch_path(f->nx, -5) == NULL, EINVAL);
	TU_ERRNO("watch_path removed", notifyx_watch_path(f->nx, wd) == NULL, EINVAL);
}

static void exclude_args(void **state)
{
	struct tu_fix *f = F(state);

	TU_ERRNO("exclude NULL", notifyx_exclude(f->nx, NULL) == -1, EINVAL);
	still_works(f, "exclude NULL");
}

static void read_args(void **state)
{
	struct tu_fix *f = F(state);
	union {
		struct notifyx_event ev;
		char b[NOTIFYX_EVENT_MAX];
	} buf;
	int wd = tu_add(&f->log, f->dir, NOTIFYX_CREATE, 0);
	size_t small[] = { 0, 1, 7, 8, sizeof(struct notifyx_event) };
	size_t i;

	TU_ERRNO("read len 0, empty", notifyx_read(f->nx, buf.b, 0) == -1, EINVAL);
	tu_touch(tu_path(f->dir, "f"));
	tu_sleep_ms(tu_quiet_ms(f->nx));
	for (i = 0; i < sizeof small / sizeof small[0]; i++)
		TU_ERRNO(tu_fmt("read len %zu", small[i]), notifyx_read(f->nx, buf.b, small[i]) == -1,
			 EINVAL);
	TU_ERRNO("read NULL buffer", notifyx_read(f->nx, NULL, sizeof buf.b) == -1, EINVAL);
	/* Nothing was consumed. */
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "f");
	TU_EQ("CREATE f read once", 1, tu_count(&f->log, wd, NOTIFYX_CREATE, "f"));
	TU_ERRNO("read when empty (non-blocking)", notifyx_read(f->nx, buf.b, sizeof buf.b) == -1,
		 EAGAIN);
	still_works(f, "bad reads");
}

static void fd_and_queries(void **state)
{
	struct tu_fix *f = F(state);
	int fd = notifyx_fd(f->nx);

	assert_true(fd >= 0);
	TU_EQ("notifyx_fd twice", fd, notifyx_fd(f->nx));
	assert_true(notifyx_backend(f->nx) >= NOTIFYX_BACKEND_INOTIFY &&
		    notifyx_backend(f->nx) <= NOTIFYX_BACKEND_POLL);
	assert_true(notifyx_supported_events(f->nx) != 0);
	assert_null(notifyx_backend_name(77));
	assert_null(notifyx_event_name(0));
	assert_null(notifyx_event_name(NOTIFYX_CREATE | NOTIFYX_DELETE));
	assert_null(notifyx_event_name(0x40000000u));
	assert_non_null(notifyx_version());
	still_works(f, "queries");
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(null_handle),
		cmocka_unit_test(open_bad_config),
		cmocka_unit_test_setup_teardown(add_watch_args, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(rm_watch_args, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(exclude_args, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(read_args, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(fd_and_queries, tu_setup, tu_teardown),
	};
	const char *name = argc > 1 ? argv[1] : "auto";
	struct notifyx *nx;

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
	notifyx_close(nx);
	return cmocka_run_group_tests_name(tu_fmt("api-args (%s)", name), tests, NULL, NULL) ? 1 : 0;
}
