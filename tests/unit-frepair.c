/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The fanotify backend's repair op (NOTIFYX_WATCH_RESCAN), called directly:
 * a watch whose events were lost (read away behind the library's back) or
 * are still pending in the kernel, while a directory of its tree was
 * renamed, one deleted, one made with contents and the root's parent
 * renamed (a moved root).  After the repair the path table must match the
 * disk, and changes made inside the renamed and the new directories must be
 * reported under their current paths.  Both mark modes: inode marks and the
 * filesystem mark (NOTIFYX_FANOTIFY_INODE_MAX=0), and a watch that is not
 * recursive (its table names the root's child directories).  Exit 77 when
 * fanotify is not available here.
 */
#include "config.h"

#include <dirent.h>
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

#define QUIET_MS 300

struct ev {
	uint32_t mask;
	char path[PATH_MAX];
};

struct fix {
	char base[64];     /* base/p/root is the watch root, moved to base/q/root */
	char root[128];    /* where the root is now */
	struct notifyx *nx;
	int wd;
	struct ev *ev;
	size_t n;
};

static void xsys(const char *fmt, ...)
{
	char cmd[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	assert_int_equal(system(cmd), 0);
}

/* Reads events until none came for QUIET_MS; keeps them in f->ev. */
static void collect(struct fix *f)
{
	static char buf[65536];
	struct pollfd p = { .fd = notifyx_fd(f->nx), .events = POLLIN };

	for (;;) {
		ssize_t len = notifyx_read(f->nx, buf, sizeof(buf));
		if (len < 0) {
			assert_int_equal(errno, EAGAIN);
			if (poll(&p, 1, QUIET_MS) <= 0)
				return;
			continue;
		}
		for (const struct notifyx_event *e = (const void *)buf;
		     (const char *)e < buf + len; e = notifyx_event_next(e)) {
			f->ev = realloc(f->ev, (f->n + 1) * sizeof(*f->ev));
			assert_non_null(f->ev);
			f->ev[f->n].mask = e->mask;
			snprintf(f->ev[f->n].path, PATH_MAX, "%s", notifyx_event_path(e));
			f->n++;
		}
	}
}

static void forget(struct fix *f)
{
	free(f->ev);
	f->ev = NULL;
	f->n = 0;
}

static void expect(struct fix *f, uint32_t mask, const char *path)
{
	for (size_t i = 0; i < f->n; i++)
		if (f->ev[i].mask == mask && !strcmp(f->ev[i].path, path))
			return;
	fprintf(stderr, "missing %s \"%s\"; read:\n", notifyx_event_name(mask), path);
	for (size_t i = 0; i < f->n; i++)
		fprintf(stderr, "  %s \"%s\"\n", notifyx_event_name(f->ev[i].mask), f->ev[i].path);
	fail();
}

/* No event names a path that is gone (the old names). */
static void expect_none_below(struct fix *f, const char *prefix)
{
	size_t len = strlen(prefix);

	for (size_t i = 0; i < f->n; i++) {
		if (!strncmp(f->ev[i].path, prefix, len) &&
		    (!f->ev[i].path[len] || f->ev[i].path[len] == '/')) {
			fprintf(stderr, "stale path: %s \"%s\"\n", notifyx_event_name(f->ev[i].mask),
				f->ev[i].path);
			fail();
		}
	}
}

/* The kernel queue read dry behind the library's back: a loss. */
static void lose_events(void)
{
	char link[300], target[64], buf[65536];
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int found = 0;

	assert_non_null(d);
	while ((e = readdir(d))) {
		ssize_t n;
		snprintf(link, sizeof(link), "/proc/self/fd/%s", e->d_name);
		if ((n = readlink(link, target, sizeof(target) - 1)) < 0)
			continue;
		target[n] = '\0';
		if (strcmp(target, "anon_inode:[fanotify]"))
			continue;
		found++;
		while (read(atoi(e->d_name), buf, sizeof(buf)) > 0)
			;
	}
	closedir(d);
	assert_int_equal(found, 1);
}

static void repair(struct fix *f)
{
	struct nx_watch *w = nx_map_get(&f->nx->watches, (uint64_t)f->wd);

	assert_non_null(w);
	assert_non_null(f->nx->ops->repair);
	/* As the core does: what was read goes out first, holds ended. */
	f->nx->flush = true;
	assert_int_equal(f->nx->ops->process(f->nx), 0);
	f->nx->flush = false;
	w->staging = true;
	assert_int_equal(f->nx->ops->repair(f->nx, w), 0);
	w->staging = false;
	nx_queue_clear(&f->nx->stage);
}

/* The path table has dir at path (relative to the root), or not. */
static void table_has(struct fix *f, const char *path, bool want)
{
	struct nx_watch *w = nx_map_get(&f->nx->watches, (uint64_t)f->wd);
	struct nx_node *n = w->root;
	char copy[PATH_MAX], *save = NULL;

	snprintf(copy, sizeof(copy), "%s", path);
	for (char *c = strtok_r(copy, "/", &save); c && n; c = strtok_r(NULL, "/", &save)) {
		n = nx_node_find(&f->nx->paths, n, c, strlen(c));
		assert_true(!n || !n->dead);
	}
	if (!n != !want)
		fprintf(stderr, "table: \"%s\" %s\n", path, want ? "missing" : "still there");
	assert_true(!n == !want);
}

static int open_fix(struct fix *f, const char *inode_max, uint32_t flags)
{
	struct notifyx_config cfg = { .size = sizeof(cfg), .backend = NOTIFYX_BACKEND_FANOTIFY,
				      .flags = NOTIFYX_NONBLOCK };

	memset(f, 0, sizeof(*f));
	snprintf(f->base, sizeof(f->base), "/tmp/nx-frepair.XXXXXX");
	assert_non_null(mkdtemp(f->base));
	xsys("mkdir -p %s/p/root/a/a1/a2 %s/p/root/b/b1 %s/p/root/c/c1", f->base, f->base, f->base);
	snprintf(f->root, sizeof(f->root), "%s/p/root", f->base);
	setenv("NOTIFYX_FANOTIFY_INODE_MAX", inode_max, 1);
	f->nx = notifyx_open(&cfg);
	unsetenv("NOTIFYX_FANOTIFY_INODE_MAX");
	assert_non_null(f->nx);
	f->wd = notifyx_add_watch(f->nx, f->root,
				  NOTIFYX_CREATE | NOTIFYX_DELETE | NOTIFYX_RENAME |
					  NOTIFYX_MOVED_IN | NOTIFYX_MOVED_OUT | NOTIFYX_ATTRIB,
				  flags);
	assert_true(f->wd > 0);
	return 0;
}

static void close_fix(struct fix *f)
{
	assert_int_equal(notifyx_close(f->nx), 0);
	xsys("rm -rf %s", f->base);
	forget(f);
}

/* The changes made while events are lost or pending. */
static void churn(struct fix *f)
{
	xsys("mv %s/p/root/a %s/p/root/a_new", f->base, f->base);
	xsys("rm -r %s/p/root/c", f->base);
	xsys("mkdir -p %s/p/root/n/n1/n2 && touch %s/p/root/n/n1/file", f->base, f->base);
	xsys("mv %s/p %s/q", f->base, f->base);
	snprintf(f->root, sizeof(f->root), "%s/q/root", f->base);
}

static void check_after(struct fix *f)
{
	table_has(f, "a_new/a1/a2", true);
	table_has(f, "a", false);
	table_has(f, "c", false);
	table_has(f, "n/n1/n2", true);
	table_has(f, "b/b1", true);
	collect(f); /* what was pending: read against the repaired table */
	forget(f);
	xsys("touch %s/a_new/a1/a2/f1 %s/n/n1/n2/f2 %s/b/b1/f3", f->root, f->root, f->root);
	xsys("mkdir %s/a_new/a1/x %s/n/y && touch %s/a_new/a1/x/f4 %s/n/y/f5", f->root,
	     f->root, f->root, f->root);
	xsys("chmod 700 %s/n/n1 %s/a_new/a1", f->root, f->root);
	xsys("mv %s/n/n1/n2 %s/n/n1/n3 && touch %s/n/n1/n3/f6", f->root, f->root, f->root);
	collect(f);
	expect(f, NOTIFYX_CREATE, "a_new/a1/a2/f1");
	expect(f, NOTIFYX_CREATE, "n/n1/n2/f2");
	expect(f, NOTIFYX_CREATE, "b/b1/f3");
	expect(f, NOTIFYX_CREATE, "a_new/a1/x");
	expect(f, NOTIFYX_CREATE, "a_new/a1/x/f4");
	expect(f, NOTIFYX_CREATE, "n/y/f5");
	expect(f, NOTIFYX_ATTRIB, "n/n1");
	expect(f, NOTIFYX_ATTRIB, "a_new/a1");
	expect(f, NOTIFYX_RENAME, "n/n1/n3");
	expect(f, NOTIFYX_CREATE, "n/n1/n3/f6");
	expect_none_below(f, "a");
	expect_none_below(f, "c");
	for (size_t i = 0; i < f->n; i++)
		assert_int_not_equal(f->ev[i].mask, NOTIFYX_OVERFLOW);
}

/* One run: the mark mode (NOTIFYX_FANOTIFY_INODE_MAX), the events lost or
 * left pending, and how many repairs in a row (a second one, with nothing
 * changed since the first, must find the marks the first took over still
 * there). */
struct mode {
	const char *inode_max;
	bool lose;
	int repairs;
};

static void test_run(void **state)
{
	const struct mode *m = *state;
	struct fix f;

	open_fix(&f, m->inode_max, NOTIFYX_WATCH_RECURSIVE);
	churn(&f);
	if (m->lose)
		lose_events();
	for (int i = 0; i < m->repairs; i++)
		repair(&f);
	check_after(&f);
	close_fix(&f);
}

/* Not recursive: the root's child directories are named for their own
 * events; one renamed during the loss is named anew. */
static void test_shallow(void **state)
{
	struct fix f;

	(void)state;
	open_fix(&f, "1000000", 0);
	xsys("mv %s/a %s/a_new && mkdir %s/m", f.root, f.root, f.root);
	lose_events();
	repair(&f);
	table_has(&f, "a_new", true);
	table_has(&f, "m", true);
	table_has(&f, "a", false);
	xsys("chmod 700 %s/a_new %s/m && touch %s/f", f.root, f.root, f.root);
	collect(&f);
	expect(&f, NOTIFYX_ATTRIB, "a_new");
	expect(&f, NOTIFYX_ATTRIB, "m");
	expect(&f, NOTIFYX_CREATE, "f");
	expect_none_below(&f, "a");
	close_fix(&f);
}

int main(void)
{
	static const struct mode inode_lost = { "1000000", true, 1 },
				 inode_pending = { "1000000", false, 1 },
				 inode_twice = { "1000000", true, 2 }, fs_lost = { "0", true, 1 },
				 fs_pending = { "0", false, 1 }, fs_twice = { "0", true, 2 };
	const struct CMUnitTest tests[] = {
		{ "inode marks, lost", test_run, NULL, NULL, (void *)&inode_lost },
		{ "inode marks, pending", test_run, NULL, NULL, (void *)&inode_pending },
		{ "filesystem mark, lost", test_run, NULL, NULL, (void *)&fs_lost },
		{ "filesystem mark, pending", test_run, NULL, NULL, (void *)&fs_pending },
		{ "inode marks, two repairs", test_run, NULL, NULL, (void *)&inode_twice },
		{ "filesystem mark, two repairs", test_run, NULL, NULL, (void *)&fs_twice },
		cmocka_unit_test(test_shallow),
	};
	struct notifyx_config cfg = { .size = sizeof(cfg), .backend = NOTIFYX_BACKEND_FANOTIFY };
	struct notifyx *nx = notifyx_open(&cfg);

	if (!nx) {
		printf("SKIP: no fanotify backend here: %s\n", strerror(errno));
		return 77;
	}
	notifyx_close(nx);
	if (geteuid() != 0) {
		/* Filesystem marks and reading another group's queue need root. */
		printf("SKIP: needs root (filesystem marks)\n");
		return 77;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
