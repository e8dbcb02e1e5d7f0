/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests of the RESCAN model (backends/rescan.c: what the application of
 * a NOTIFYX_WATCH_RESCAN watch has been told), fed directly events that a
 * mirror cannot apply: a rename whose source lies below its destination (a
 * fanotify listing ahead of its records once produced one, and the model
 * freed the source with the destination before moving it), and one that
 * would put a directory inside itself.  The model must take them without
 * touching freed memory (the ASan build runs this), and the watch must go on
 * reporting.  And, through the core (nx_emit), that such events are never
 * delivered to a watch that mirrors: each is a loss that a repair mends. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "nx.h"
#include "unitsh.h"

#define EVENTS (NOTIFYX_CREATE | NOTIFYX_DELETE | NOTIFYX_RENAME | NOTIFYX_MOVED_OUT | NOTIFYX_MOVED_IN)

static char top[64];

static int setup(void **state)
{
	(void)state;
	strcpy(top, "/tmp/nx-rescan.XXXXXX");
	assert_non_null(mkdtemp(top));
	unit_sh("mkdir -p %s/t/a/b/c && touch %s/t/a/b/f %s/t/a/b/c/g", top, top, top);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unit_sh("rm -rf %s", top);
	return 0;
}

/* Reads until an event of mask with path comes (or 2 s pass): found? */
static bool read_until(struct notifyx *nx, uint32_t mask, const char *path)
{
	static uint64_t buf[4 * NOTIFYX_EVENT_MAX / sizeof(uint64_t)];
	struct pollfd pfd = { .fd = notifyx_fd(nx), .events = POLLIN };
	const struct notifyx_event *ev;
	ssize_t n;

	while (poll(&pfd, 1, 2000) > 0) {
		while ((n = notifyx_read(nx, buf, sizeof(buf))) > 0) {
			notifyx_for_each_event(ev, buf, n) {
				if (ev->mask == mask && (!path || !strcmp(notifyx_event_path(ev), path)))
					return true;
			}
		}
		assert_true(n < 0 && errno == EAGAIN);
	}
	return false;
}

/* A handle with a RESCAN watch of top/t, its listing read; *w its watch. */
static struct notifyx *open_watch(struct nx_watch **w)
{
	struct notifyx_config c = { .size = sizeof(c), .backend = NOTIFYX_BACKEND_INOTIFY,
				    .flags = NOTIFYX_NONBLOCK };
	struct notifyx *nx = notifyx_open(&c);
	char root[PATH_MAX];
	int wd;

	assert_non_null(nx);
	snprintf(root, sizeof(root), "%s/t", top);
	wd = notifyx_add_watch(nx, root, EVENTS,
			       NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_LIST | NOTIFYX_WATCH_RESCAN);
	assert_true(wd > 0);
	assert_true(read_until(nx, NOTIFYX_SYNC, NULL));
	*w = nx_map_get(&nx->watches, (uint64_t)wd);
	assert_non_null(*w);
	assert_non_null((*w)->rescan);
	return nx;
}

/* After what the model could not follow, the watch still reports. */
static void still_reports(struct notifyx *nx)
{
	unit_sh("touch %s/t/a/later", top);
	assert_true(read_until(nx, NOTIFYX_CREATE, "a/later"));
	assert_int_equal(notifyx_close(nx), 0);
}

/* rename a <- a/b: the destination holds the source. */
static void source_below_destination(void **state)
{
	struct nx_watch *w;
	struct notifyx *nx = open_watch(&w);

	(void)state;
	nx_rescan_apply(nx, w, NOTIFYX_RENAME, NOTIFYX_EVENT_ISDIR, "a", 1, "a/b", 3);
	nx_rescan_apply(nx, w, NOTIFYX_RENAME, NOTIFYX_EVENT_ISDIR | NOTIFYX_EVENT_EXCHANGE, "a",
			1, "a/b/c", 5);
	still_reports(nx);
}

/* rename a/b/c/x <- a: a directory into itself. */
static void destination_below_source(void **state)
{
	struct nx_watch *w;
	struct notifyx *nx = open_watch(&w);

	(void)state;
	nx_rescan_apply(nx, w, NOTIFYX_RENAME, NOTIFYX_EVENT_ISDIR, "a/b/c/x", 7, "a", 1);
	nx_rescan_apply(nx, w, NOTIFYX_RENAME, NOTIFYX_EVENT_ISDIR | NOTIFYX_EVENT_EXCHANGE,
			"a/b", 3, "a", 1);
	still_reports(nx);
}

/* What a watch reports up to its next SYNC, as "MASK path;" (a directory's
 * path ending in "/"). */
static void read_to_sync(struct notifyx *nx, char *out, size_t size)
{
	static uint64_t buf[4 * NOTIFYX_EVENT_MAX / sizeof(uint64_t)];
	struct pollfd pfd = { .fd = notifyx_fd(nx), .events = POLLIN };
	const struct notifyx_event *ev;
	size_t len = 0;
	ssize_t n;

	out[0] = '\0';
	/* Read first: what the core queued outside a read (nx_emit below)
	 * does not make the descriptor readable. */
	do {
		while ((n = notifyx_read(nx, buf, sizeof(buf))) > 0) {
			notifyx_for_each_event(ev, buf, n) {
				len += (size_t)snprintf(out + len, size - len, "%s %s%s;",
							notifyx_event_name(ev->mask),
							notifyx_event_path(ev),
							ev->flags & NOTIFYX_EVENT_ISDIR ? "/" : "");
				if (ev->mask == NOTIFYX_SYNC)
					return;
			}
		}
		assert_true(n < 0 && errno == EAGAIN);
	} while (poll(&pfd, 1, 2000) > 0);
}

/* Events that a copy following "Mirroring a tree" could not apply (the
 * model is that copy) are not delivered: each is a loss, and the repair
 * that follows finds nothing to report (the disk is as the copy has it). */
static void copy_cannot_apply(void **state)
{
	static const struct {
		uint32_t mask, flags;
		const char *path, *old;
	} bad[] = {
		{ NOTIFYX_CREATE, 0, "a/b/f/x", NULL },                      /* in a file */
		{ NOTIFYX_MOVED_IN, NOTIFYX_EVENT_ISDIR, "nowhere/x", NULL }, /* in a directory it lacks */
		{ NOTIFYX_RENAME, 0, "nowhere/f", "a/b/f" },                 /* into a directory it lacks */
		{ NOTIFYX_RENAME, NOTIFYX_EVENT_ISDIR | NOTIFYX_EVENT_EXCHANGE, "a/b", "a/zz" }, /* an end it lacks */
		{ NOTIFYX_RENAME, NOTIFYX_EVENT_ISDIR, "a/b/c/x", "a" },     /* into itself */
	};
	char seen[256];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct nx_watch *w;
		struct notifyx *nx = open_watch(&w);
		const char *old = bad[i].old;

		assert_false(nx_emit(nx, w, bad[i].mask, bad[i].flags, 0, 0, bad[i].path,
				     strlen(bad[i].path), old, old ? strlen(old) : 0));
		read_to_sync(nx, seen, sizeof(seen));
		assert_string_equal(seen, "overflow ;sync ;");
		char later[32];
		snprintf(later, sizeof(later), "a/later%zu", i);
		unit_sh("touch %s/t/%s", top, later); /* and the watch goes on */
		assert_true(read_until(nx, NOTIFYX_CREATE, later));
		assert_int_equal(notifyx_close(nx), 0);
	}
	/* What a copy can apply is delivered: a file in a directory it has. */
	struct nx_watch *w;
	struct notifyx *nx = open_watch(&w);
	assert_true(nx_emit(nx, w, NOTIFYX_CREATE, 0, 0, 0, "a/b/c/new", 9, NULL, 0));
	read_to_sync(nx, seen, sizeof(seen));
	assert_string_equal(seen, "create a/b/c/new;");
	assert_int_equal(notifyx_close(nx), 0);
}

/* An exchange the model cannot follow (its old_path never told of) leaves
 * each end what it is now; the entry it brings to old_path is the one the
 * model had at path, of that entry's type (ISDIR tells of the other end).
 * Here a/b/f was a file when listed and is a directory on disk (a change
 * not read yet); an exchange of it with a/b/yy, which never existed, puts
 * the file at yy in the model; the repair that follows finds no yy on disk
 * and reports its deletion, as a file. */
static void exchange_end_untold(void **state)
{
	struct nx_watch *w;
	struct notifyx *nx = open_watch(&w);
	char seen[512];

	(void)state;
	unit_sh("rm %s/t/a/b/f && mkdir %s/t/a/b/f", top, top);
	nx_rescan_apply(nx, w, NOTIFYX_RENAME, NOTIFYX_EVENT_ISDIR | NOTIFYX_EVENT_EXCHANGE,
			"a/b/f", 5, "a/b/yy", 6);
	assert_false(nx_emit(nx, w, NOTIFYX_CREATE, 0, 0, 0, "nowhere/x", 9, NULL, 0)); /* a repair */
	read_to_sync(nx, seen, sizeof(seen));
	print_message("  %s\n", seen);
	assert_non_null(strstr(seen, "delete a/b/yy;"));
	assert_int_equal(notifyx_close(nx), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(source_below_destination, setup, teardown),
		cmocka_unit_test_setup_teardown(destination_below_source, setup, teardown),
		cmocka_unit_test_setup_teardown(copy_cannot_apply, setup, teardown),
		cmocka_unit_test_setup_teardown(exchange_end_untold, setup, teardown),
	};

	return cmocka_run_group_tests_name("rescan model", tests, NULL, NULL);
}
