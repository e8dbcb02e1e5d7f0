/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The core's dispatch is not re-entrant: a watch that ends while a backend
 * is processing what the kernel queued (ONESHOT fired, its root deleted, its
 * repair failed) is detached from that backend only once process() has
 * returned, never from inside it (libnotifyx/nx.h, struct nx_backend).
 * Checked on every backend by a spy on ops->rm_watch: each end detaches its
 * watch exactly once, outside the dispatch, and IGNORED is the watch's last
 * event. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "nx.h"

static struct nx_backend spy_ops;
static const struct nx_backend *real_ops;
static int detached, detached_inside;
static bool inside; /* in the backend's process() or repair() */

static void spy_rm_watch(struct notifyx *nx, struct nx_watch *w)
{
	detached++;
	detached_inside += inside;
	real_ops->rm_watch(nx, w);
}

static int spy_process(struct notifyx *nx, unsigned flags)
{
	int ret;

	inside = true;
	ret = real_ops->process(nx, flags);
	inside = false;
	return ret;
}

/* A handle of the backend, its rm_watch spied on; NULL when this machine
 * cannot open that backend (fanotify needs a privilege). */
static struct notifyx *open_spied(uint32_t backend)
{
	struct notifyx_config c = { .size = sizeof(c), .backend = backend,
				    .flags = NOTIFYX_NONBLOCK, .poll_interval_ms = 20 };
	struct notifyx *nx = notifyx_open(&c);

	if (!nx) {
		print_message("backend %u: cannot open (%s): skipped\n", backend, strerror(errno));
		return NULL;
	}
	real_ops = nx->ops;
	spy_ops = *nx->ops;
	spy_ops.rm_watch = spy_rm_watch;
	spy_ops.process = spy_process;
	nx->ops = &spy_ops;
	detached = detached_inside = 0;
	return nx;
}

/* Reads until wd's IGNORED (at most 5 s); returns how many events of wd
 * came, and fails if any came after its IGNORED. */
static int read_until_ignored(struct notifyx *nx, int wd)
{
	static _Alignas(8) char buf[NOTIFYX_EVENT_MAX * 8];
	int n = 0, ignored = 0;

	for (int waited = 0; !ignored && waited < 5000; waited += 10) {
		struct pollfd p = { .fd = notifyx_fd(nx), .events = POLLIN };
		const struct notifyx_event *e;
		ssize_t got;
		poll(&p, 1, 10);
		while ((got = notifyx_read(nx, buf, sizeof(buf))) > 0) {
			notifyx_for_each_event(e, buf, got) {
				if (e->wd != wd)
					continue;
				assert_int_equal(ignored, 0); /* nothing after IGNORED */
				ignored += e->mask == NOTIFYX_IGNORED;
				n++;
			}
		}
	}
	assert_int_equal(ignored, 1);
	return n;
}

static char top[64];

static void tree(void)
{
	char p[128];

	strcpy(top, "/tmp/unit-dispatch-XXXXXX");
	assert_non_null(mkdtemp(top));
	snprintf(p, sizeof(p), "%s/sub", top);
	assert_int_equal(mkdir(p, 0755), 0);
}

static void touch(const char *dir, const char *name)
{
	char p[PATH_MAX];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	assert_non_null(f = fopen(p, "w"));
	fclose(f);
}

static void rm_tree(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", top);
	assert_int_equal(system(cmd), 0);
}

/* Runs case on every backend this machine can open, each with a new spied
 * handle and a new tree (top, with top/sub); the case ends the watch it adds
 * and returns it.  Each end must detach its watch once, outside the
 * dispatch. */
static void on_every_backend(int (*run)(struct notifyx *nx))
{
	static const uint32_t backends[] = { NOTIFYX_BACKEND_INOTIFY, NOTIFYX_BACKEND_FANOTIFY,
					     NOTIFYX_BACKEND_DNOTIFY, NOTIFYX_BACKEND_POLL };

	for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++) {
		struct notifyx *nx = open_spied(backends[i]);

		if (!nx)
			continue;
		tree();
		run(nx);
		assert_int_equal(detached, 1);
		assert_int_equal(detached_inside, 0);
		assert_int_equal(notifyx_close(nx), 0);
		rm_tree();
	}
}

/* A recursive ONESHOT watch fires on the first of a batch of creations in
 * several directories: the rest of the batch is dispatched after it ended. */
static int oneshot_in_a_batch_on(struct notifyx *nx)
{
	char sub[128];
	int wd;

	snprintf(sub, sizeof(sub), "%s/sub", top);
	assert_true((wd = notifyx_add_watch(nx, top, NOTIFYX_CREATE,
					    NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_ONESHOT)) > 0);
	for (int k = 0; k < 20; k++) {
		char name[16];
		snprintf(name, sizeof(name), "f%d", k);
		touch(k % 2 ? top : sub, name);
	}
	assert_int_equal(read_until_ignored(nx, wd), 2); /* one CREATE, IGNORED */
	return wd;
}

/* A root deleted with its tree: the end comes from inside the dispatch. */
static int root_deleted_on(struct notifyx *nx)
{
	int wd = notifyx_add_watch(nx, top, NOTIFYX_CREATE | NOTIFYX_DELETE | NOTIFYX_DELETE_SELF,
				   NOTIFYX_WATCH_RECURSIVE);

	assert_true(wd > 0);
	touch(top, "a");
	rm_tree();
	assert_true(read_until_ignored(nx, wd) >= 2);
	tree(); /* (for on_every_backend to remove) */
	return wd;
}

/* notifyx_rm_watch detaches at once, once. */
static int removed_by_the_application_on(struct notifyx *nx)
{
	int wd = notifyx_add_watch(nx, top, NOTIFYX_CREATE, NOTIFYX_WATCH_RECURSIVE);

	assert_true(wd > 0);
	assert_int_equal(notifyx_rm_watch(nx, wd), 0);
	assert_int_equal(detached, 1);
	assert_int_equal(detached_inside, 0);
	assert_int_equal(read_until_ignored(nx, wd), 1);
	return wd;
}

static void oneshot_in_a_batch(void **state)
{
	(void)state;
	on_every_backend(oneshot_in_a_batch_on);
}

static void root_deleted(void **state)
{
	(void)state;
	on_every_backend(root_deleted_on);
}

static void removed_by_the_application(void **state)
{
	(void)state;
	on_every_backend(removed_by_the_application_on);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(oneshot_in_a_batch),
		cmocka_unit_test(root_deleted),
		cmocka_unit_test(removed_by_the_application),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
