/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Conformance test, the edges of API.md 0.2 (issue "Exact at the edges"),
 * deep trees: entries deeper than PATH_MAX (absolute) whose path relative to
 * the root fits, and the ERROR when it does not; rm -rf of a tree under one
 * and two overlapping watches.  Each case runs on /tmp and on a private
 * tmpfs (ON_BOTH, conformance.h).  Run from conformance.c's main through
 * conf_deep_run().
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conformance.h"

static void touch_at(int dfd, const char *name)
{
	int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);

	if (fd < 0)
		fail_msg("create %.20s...: %s", name, strerror(errno));
	close(fd);
}

/* A name of len characters, all c (len < NAME_MAX). */
static const char *long_name(char c, size_t len)
{
	static char b[8][NAME_MAX + 1];
	static unsigned k;
	char *s = b[k++ % 8];

	memset(s, c, len);
	s[len] = 0;
	return s;
}

/* ---- deep paths ----------------------------------------------------------- */

#define LONG 250 /* a name near NAME_MAX */

/* The chain of n long names starting with letter c, as a relative path. */
static char *chain_rel(char c, int n)
{
	char *rel = strdup(""), *p;
	int i;

	assert_non_null(rel);
	for (i = 0; i < n; i++) {
		p = conf_join(rel, long_name((char)(c + i), LONG));
		free(rel);
		rel = p;
	}
	return rel;
}

/* Make (mk) or open the chain of n long names from letter c below dfd;
 * a file "f" in each new level; returns the bottom, dfd is closed. */
static int chain_at(int dfd, char c, int n, int mk)
{
	int i;

	for (i = 0; i < n; i++) {
		dfd = conf_down(dfd, long_name((char)(c + i), LONG), mk);
		if (mk)
			touch_at(dfd, "f");
	}
	return dfd;
}

/* A root whose absolute path is about 3000 characters (base/deep and 12 long
 * names), with a chain of 6 long names below it, a file "f" at each level
 * (the root's included):
 * the bottom's absolute path is longer than PATH_MAX, its path relative to
 * the root about 1500.  A LIST watch lists everything; a plain recursive
 * watch beside it too; creations and deletions at the bottom (a file, a new
 * directory with a file in it) are reported to both; never an ERROR. */
static void deep_chain(struct tu_fix *f, const char *base)
{
	char *root = chain_rel('A', 12), *p, *rel, *bot, *sub, *subf, *newf;
	int fd, i, list, plain;
	size_t sync;

	p = conf_join("deep", root);
	free(root);
	root = conf_join(base, p);
	free(p);
	fd = conf_down(conf_open_dir(base), "deep", 1);
	close(chain_at(fd, 'A', 12, 1)); /* the root is the 12th level: its "f" is listed */
	assert_true(strlen(root) < PATH_MAX - 2 * LONG);
	close(chain_at(conf_open_dir(root), 'a', 6, 1));

	list = tu_add(&f->log, root, NOTIFYX_CREATE | NOTIFYX_DELETE,
		      NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_LIST);
	plain = tu_add(&f->log, root, NOTIFYX_CREATE | NOTIFYX_DELETE, NOTIFYX_WATCH_RECURSIVE);
	sync = (size_t)conf_listed(&f->log, list);
	tu_settle(&f->log);
	for (i = 1; i <= 6; i++) {
		char *file;

		rel = chain_rel('a', i);
		file = conf_join(rel, "f");
		ONCE(&f->log, list, NOTIFYX_CREATE, rel, NOTIFYX_EVENT_ISDIR | NOTIFYX_EVENT_SYNTHETIC,
			NOTIFYX_EVENT_ISDIR | NOTIFYX_EVENT_SYNTHETIC);
		ONCE(&f->log, list, NOTIFYX_CREATE, file, NOTIFYX_EVENT_ISDIR | NOTIFYX_EVENT_SYNTHETIC,
			NOTIFYX_EVENT_SYNTHETIC);
		BEFORE(&f->log, tu_find(&f->log, 0, list, NOTIFYX_CREATE, file), (ssize_t)sync,
			  "the listing before its SYNC");
		free(file);
		free(rel);
	}
	ONCE(&f->log, list, NOTIFYX_CREATE, "f", NOTIFYX_EVENT_ISDIR, 0);
	COUNT(&f->log, list, 13, "events of the LIST watch (13 entries)");
	COUNT(&f->log, plain, 0, "events of the plain watch");
	bot = chain_rel('a', 6);
	print_message("  root %zu characters, bottom %zu below it, %zu absolute\n", strlen(root),
		      strlen(bot), strlen(root) + 1 + strlen(bot));
	assert_true(strlen(root) + 1 + strlen(bot) >= PATH_MAX);

	/* Changes at the bottom, through descriptors (open by path fails there). */
	fd = chain_at(conf_open_dir(root), 'a', 6, 0);
	newf = conf_join(bot, "new");
	sub = conf_join(bot, "n");
	subf = conf_join(sub, "g");
	touch_at(fd, "new");
	WAIT(&f->log, plain, NOTIFYX_CREATE, newf);
	fd = conf_down(fd, "n", 1);
	touch_at(fd, "g");
	close(fd);
	WAIT(&f->log, plain, NOTIFYX_CREATE, subf);
	WAIT(&f->log, list, NOTIFYX_CREATE, subf);
	tu_settle(&f->log);
	for (i = 0; i < 2; i++) {
		int wd = i ? plain : list;

		ONCE(&f->log, wd, NOTIFYX_CREATE, newf, NOTIFYX_EVENT_ISDIR, 0);
		ONCE(&f->log, wd, NOTIFYX_CREATE, sub, NOTIFYX_EVENT_ISDIR, NOTIFYX_EVENT_ISDIR);
		ONCE(&f->log, wd, NOTIFYX_CREATE, subf, NOTIFYX_EVENT_ISDIR, 0);
	}
	fd = chain_at(conf_open_dir(root), 'a', 6, 0);
	assert_int_equal(unlinkat(fd, "n/g", 0), 0);
	assert_int_equal(unlinkat(fd, "n", AT_REMOVEDIR), 0);
	assert_int_equal(unlinkat(fd, "new", 0), 0);
	close(fd);
	WAIT(&f->log, plain, NOTIFYX_DELETE, sub);
	WAIT(&f->log, list, NOTIFYX_DELETE, sub);
	tu_settle(&f->log);
	for (i = 0; i < 2; i++) {
		int wd = i ? plain : list;

		ONCE(&f->log, wd, NOTIFYX_DELETE, newf, NOTIFYX_EVENT_ISDIR, 0);
		ONCE(&f->log, wd, NOTIFYX_DELETE, subf, NOTIFYX_EVENT_ISDIR, 0);
		BEFORE(&f->log, tu_find(&f->log, 0, wd, NOTIFYX_DELETE, subf),
			  tu_find(&f->log, 0, wd, NOTIFYX_DELETE, sub), "an entry before its directory");
	}
	conf_no_error(&f->log);
	free(root);
	free(bot);
	free(newf);
	free(sub);
	free(subf);
}
ON_BOTH(deep_chain)

/* The next record of f's handle, read whole into a buffer of exactly its
 * size (want), after a read with 8 bytes less failed with EINVAL and left it
 * there; its type, path and old path are checked. */
static void read_exact(struct tu_fix *f, size_t want, uint32_t mask, const char *path,
		       const char *old)
{
	static uint64_t buf[NOTIFYX_EVENT_MAX / 8];
	const struct notifyx_event *e = (const void *)buf;
	struct pollfd p = { .fd = notifyx_fd(f->nx), .events = POLLIN };
	long end = tu_now_ms() + 10 * TU_WAIT_MS;
	ssize_t n;

	for (;;) { /* (a handle of the fixture does not block) */
		errno = 0;
		if ((n = notifyx_read(f->nx, buf, want - 8)) < 0 && errno == EAGAIN &&
		    tu_now_ms() < end && poll(&p, 1, 100) >= 0)
			continue;
		break;
	}
	if (n >= 0 || errno != EINVAL)
		fail_msg("notifyx_read with %zu bytes, 8 less than the %s record: %zd, %s (want "
			 "EINVAL)", want - 8, tu_mask_str(mask), n, strerrorname_np(errno));
	n = notifyx_read(f->nx, buf, want);
	if (n != (ssize_t)want)
		fail_msg("notifyx_read with exactly the %zu bytes of the %s record: %zd, %s", want,
			 tu_mask_str(mask), n, n < 0 ? strerrorname_np(errno) : "");
	TU_EQ("type", mask, e->mask);
	TU_STREQ("path", path, notifyx_event_path(e));
	if (old)
		TU_STREQ("old path", old, notifyx_event_old_path(e));
}

/* The longest paths an event carries: a file PATH_MAX-1 characters below
 * the root (16 long names, then the file), whose CREATE record is
 * (32 + PATH_MAX + 7) & ~7 bytes; renamed to another such name, a RENAME of
 * exactly NOTIFYX_EVENT_MAX bytes.  notifyx_read hands each out to a buffer
 * of exactly its size, and a buffer 8 bytes shorter gets EINVAL with nothing
 * consumed.  A name one character longer is an ERROR naming the directory. */
static void path_max_edges(struct tu_fix *f, const char *base)
{
	const char *root = tu_path(base, "r");
	char *dir = chain_rel('a', 16);
	size_t len = PATH_MAX - 1 - strlen(dir) - 1;
	char *x = strdup(long_name('x', len)), *y = strdup(long_name('y', len));
	char *px = conf_join(dir, x), *py = conf_join(dir, y);
	int bottom, wd;
	size_t k;

	assert_true(len > 0 && len < NAME_MAX && strlen(px) == PATH_MAX - 1);
	tu_mkdir(root);
	bottom = chain_at(conf_open_dir(root), 'a', 16, 1);
	wd = tu_add(&f->log, root, NOTIFYX_CREATE | NOTIFYX_RENAME, NOTIFYX_WATCH_RECURSIVE);
	tu_settle(&f->log);
	touch_at(bottom, x);
	read_exact(f, (sizeof(struct notifyx_event) + PATH_MAX + 7) & ~(size_t)7, NOTIFYX_CREATE,
		   px, NULL);
	if (renameat(bottom, x, bottom, y) < 0)
		fail_msg("renameat: %s", strerror(errno));
	read_exact(f, NOTIFYX_EVENT_MAX, NOTIFYX_RENAME, py, px);
	touch_at(bottom, long_name('z', len + 1));
	WAIT(&f->log, wd, NOTIFYX_ERROR, NULL);
	tu_settle(&f->log);
	k = ONCE(&f->log, wd, NOTIFYX_ERROR, NULL, NOTIFYX_EVENT_ISDIR, NOTIFYX_EVENT_ISDIR);
	TU_STREQ("ERROR path: the directory", dir, f->log.ev[k].path);
	TU_EQ("ERROR errno", ENAMETOOLONG, f->log.ev[k].error);
	close(bottom);
	free(py);
	free(px);
	free(y);
	free(x);
	free(dir);
}
ON_BOTH(path_max_edges)

/* Below a short root, a chain of 17 long names: the 16th directory's
 * relative path fits (about 4000 characters), the 17th's does not.  Each
 * watch gets an ERROR (an errno in error) naming the 16th, the deepest that
 * fits, and nothing that does not fit; LIST lists what fits.  A directory
 * made later at the same depth is an ERROR naming the 16th again. */
static void deep_too_long(struct tu_fix *f, const char *base)
{
	const char *root = tu_path(base, "r");
	char *fits = chain_rel('a', 16), *file = conf_join(fits, "f");
	int fd, list, plain, i;
	size_t k;
	/* A recursive watch with filesystem marks that does not list does not
	 * walk its tree (notifyx_add_watch(3)): fanotify as root. */
	int walks = notifyx_backend(f->nx) != NOTIFYX_BACKEND_FANOTIFY || conf_inode_marks(f);

	tu_mkdir(root);
	close(chain_at(conf_open_dir(root), 'a', 17, 1));
	assert_true(strlen(fits) < PATH_MAX && strlen(fits) + 1 + LONG >= PATH_MAX);
	list = tu_add(&f->log, root, NOTIFYX_CREATE | NOTIFYX_DELETE,
		      NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_LIST);
	plain = tu_add(&f->log, root, NOTIFYX_CREATE | NOTIFYX_DELETE, NOTIFYX_WATCH_RECURSIVE);
	conf_listed(&f->log, list);
	WAIT(&f->log, list, NOTIFYX_ERROR, NULL);
	if (!walks)
		print_message("  the plain watch does not walk its tree (fanotify, filesystem "
			      "marks): its ERROR comes with the first event below\n");
	else
		WAIT(&f->log, plain, NOTIFYX_ERROR, NULL);
	tu_settle(&f->log);
	for (i = 0; i < (walks ? 2 : 1); i++) {
		int wd = i ? plain : list;

		k = ONCE(&f->log, wd, NOTIFYX_ERROR, NULL, NOTIFYX_EVENT_ISDIR, NOTIFYX_EVENT_ISDIR);
		TU_STREQ("ERROR path: the deepest directory that fits", fits, f->log.ev[k].path);
		if (!f->log.ev[k].error)
			fail_msg("ERROR without an errno");
		print_message("  wd %d: ERROR %s (%d characters)\n", wd,
			      strerrorname_np(f->log.ev[k].error), (int)strlen(fits));
	}
	ONCE(&f->log, list, NOTIFYX_CREATE, fits, NOTIFYX_EVENT_ISDIR, NOTIFYX_EVENT_ISDIR);
	ONCE(&f->log, list, NOTIFYX_CREATE, file, NOTIFYX_EVENT_ISDIR, 0);
	COUNT(&f->log, list, 33, "events of the LIST watch (32 entries, ERROR)");
	COUNT(&f->log, plain, walks, "events of the plain watch (ERROR, if it walks)");

	/* Later: a new directory that does not fit, beside the 17th. */
	k = f->log.n;
	fd = chain_at(conf_open_dir(root), 'a', 16, 0);
	if (mkdirat(fd, long_name('z', LONG), 0755) < 0)
		fail_msg("mkdirat: %s", strerror(errno));
	close(fd);
	for (i = 0; i < 2; i++) {
		int wd = i ? plain : list;
		size_t e = WAIT_FROM(&f->log, k, wd, NOTIFYX_ERROR, NULL);

		TU_STREQ("ERROR path of a directory made too deep", fits, f->log.ev[e].path);
	}
	free(fits);
	free(file);
}
ON_BOTH(deep_too_long)

/* ---- rm -rf ---------------------------------------------------------------- */

/* A tree of 4 levels below base with files at every level, relative to base. */
static const char *const rm_dirs[] = { "r", "r/a", "r/a/b", "r/a/b/c" };
static const char *const rm_entries[] = {
	"r/f0", "r/a", "r/a/f1", "r/a/g1", "r/a/b", "r/a/b/f2", "r/a/b/c", "r/a/b/c/f3",
	"r/a/b/c/g3", "r", "r/a/b/c/h3",
};
#define N_RM (sizeof rm_entries / sizeof rm_entries[0])

static int rm_is_dir(const char *e)
{
	size_t i;

	for (i = 0; i < sizeof rm_dirs / sizeof rm_dirs[0]; i++)
		if (!strcmp(rm_dirs[i], e))
			return 1;
	return 0;
}

/* Every entry (its path less prefix, which it must start with) is one DELETE
 * of wd with the right ISDIR, after the DELETEs of the entries below it. */
static void rm_check(const struct tu_log *log, int wd, const char *prefix)
{
	size_t i, j, pl = strlen(prefix);

	for (i = 0; i < N_RM; i++) {
		const char *e = rm_entries[i];

		if (strncmp(e, prefix, pl) || !e[pl])
			continue;
		ONCE(log, wd, NOTIFYX_DELETE, e + pl, NOTIFYX_EVENT_ISDIR,
			rm_is_dir(e) ? NOTIFYX_EVENT_ISDIR : 0);
		for (j = 0; j < N_RM; j++) {
			const char *in = rm_entries[j];

			if (strncmp(in, e, strlen(e)) || in[strlen(e)] != '/')
				continue;
			BEFORE(log, tu_find(log, 0, wd, NOTIFYX_DELETE, in + pl),
				  tu_find(log, 0, wd, NOTIFYX_DELETE, e + pl),
				  tu_fmt("DELETE %s before DELETE of its directory %s", in + pl, e + pl));
		}
	}
}

/* rm -rf base/r with a recursive watch on base (parent), and one on base/r
 * (self) added before (order 1) or after (order 2) it, or none (order 0):
 * each watch gets each DELETE exactly once, entries before their directory;
 * the watch on r ends with DELETE_SELF (ISDIR) and IGNORED. */
static void rm_rf_tree(struct tu_fix *f, const char *base, int order)
{
	int parent = 0, self = 0;
	size_t i, n = 0;
	ssize_t ds;

	for (i = 0; i < sizeof rm_dirs / sizeof rm_dirs[0]; i++)
		tu_mkdir(tu_path(base, rm_dirs[i]));
	for (i = 0; i < N_RM; i++)
		if (!rm_is_dir(rm_entries[i]))
			tu_touch(tu_path(base, rm_entries[i]));
	if (order == 1)
		self = tu_add(&f->log, tu_path(base, "r"), GO | SELF, NOTIFYX_WATCH_RECURSIVE);
	parent = tu_add(&f->log, base, GO | NOTIFYX_CREATE, NOTIFYX_WATCH_RECURSIVE);
	if (order == 2)
		self = tu_add(&f->log, tu_path(base, "r"), GO | SELF, NOTIFYX_WATCH_RECURSIVE);
	tu_rm_rf(tu_path(base, "r"));
	WAIT(&f->log, parent, NOTIFYX_DELETE, "r");
	if (self)
		WAIT(&f->log, self, NOTIFYX_IGNORED, "");
	tu_settle(&f->log);
	rm_check(&f->log, parent, "");
	COUNT(&f->log, parent, N_RM, "events of the watch on the parent (one DELETE per entry)");
	if (!self)
		return;
	rm_check(&f->log, self, "r/");
	ds = (ssize_t)ONCE(&f->log, self, NOTIFYX_DELETE_SELF, "", NOTIFYX_EVENT_ISDIR,
			      NOTIFYX_EVENT_ISDIR);
	for (i = 0; i < N_RM; i++)
		if (strcmp(rm_entries[i], "r")) {
			BEFORE(&f->log, tu_find(&f->log, 0, self, NOTIFYX_DELETE, rm_entries[i] + 2),
				  ds, "the root's entries before its DELETE_SELF");
			n++;
		}
	COUNT(&f->log, self, n + 2, "events of the watch on r (DELETEs, DELETE_SELF, IGNORED)");
}

ON_BOTH_WITH(rm_rf_one, rm_rf_tree, 0)
ON_BOTH_WITH(rm_rf_overlap, rm_rf_tree, 1)
ON_BOTH_WITH(rm_rf_overlap_later, rm_rf_tree, 2)

/* Before anything is read: a file made in t/a/b/c, b renamed to t/m, a file
 * made in m/c, then m removed whole.  Each event names its entry where it
 * was when it happened (a directory that is gone when its events are read
 * is placed by the events that moved and deleted it), entries before their
 * directory.  The scanning backends see states, not these steps: skipped. */
static void moved_then_removed(struct tu_fix *f, const char *base)
{
	static const char *const gone[] = { "m/c/f0", "m/c/x2" };
	const char *t = tu_path(base, "t");
	int wd;

	tu_mkdir(t);
	tu_mkdir(tu_path(t, "a"));
	tu_mkdir(tu_path(t, "a/b"));
	tu_mkdir(tu_path(t, "a/b/c"));
	tu_touch(tu_path(t, "a/b/c/f0"));
	if (f->log.scanning) {
		print_message("[ SKIP     ] %s sees states: what happened between two scans is "
			      "no event\n", notifyx_backend_name(notifyx_backend(f->nx)));
		skip();
	}
	wd = tu_add(&f->log, t, NOTIFYX_CREATE | NOTIFYX_DELETE | NOTIFYX_RENAME,
		    NOTIFYX_WATCH_RECURSIVE);
	tu_touch(tu_path(t, "a/b/c/x1"));
	tu_rename(tu_path(t, "a/b"), tu_path(t, "m"));
	tu_touch(tu_path(t, "m/c/x2"));
	tu_rm_rf(tu_path(t, "m"));
	WAIT(&f->log, wd, NOTIFYX_DELETE, "m");
	tu_settle(&f->log);
	ssize_t made = (ssize_t)ONCE(&f->log, wd, NOTIFYX_CREATE, "a/b/c/x1", NOTIFYX_EVENT_ISDIR, 0);
	ssize_t moved = (ssize_t)ONCE(&f->log, wd, NOTIFYX_RENAME, "m", NOTIFYX_EVENT_ISDIR,
				      NOTIFYX_EVENT_ISDIR);
	TU_STREQ("the old path of the rename", "a/b", f->log.ev[moved].old_path);
	ssize_t later = (ssize_t)ONCE(&f->log, wd, NOTIFYX_CREATE, "m/c/x2", NOTIFYX_EVENT_ISDIR, 0);
	BEFORE(&f->log, made, moved, "the file made before the rename");
	BEFORE(&f->log, moved, later, "the file made after it");
	ssize_t c = (ssize_t)ONCE(&f->log, wd, NOTIFYX_DELETE, "m/c", NOTIFYX_EVENT_ISDIR,
				  NOTIFYX_EVENT_ISDIR);
	ssize_t m = (ssize_t)ONCE(&f->log, wd, NOTIFYX_DELETE, "m", NOTIFYX_EVENT_ISDIR,
				  NOTIFYX_EVENT_ISDIR);
	for (size_t i = 0; i < sizeof gone / sizeof gone[0]; i++) {
		ssize_t e = (ssize_t)ONCE(&f->log, wd, NOTIFYX_DELETE, gone[i], NOTIFYX_EVENT_ISDIR, 0);
		BEFORE(&f->log, later, e, "the files deleted after the last was made");
		BEFORE(&f->log, e, c, "a file deleted before its directory");
	}
	/* fanotify merges an unread deletion into the unread creation of the
	 * same file at the same name: one record, split before the rename
	 * (API.md: in an order consistent with the entry's state). */
	ssize_t x1 = tu_find(&f->log, 0, wd, NOTIFYX_DELETE, "m/c/x1");
	if (x1 < 0 && notifyx_backend(f->nx) == NOTIFYX_BACKEND_FANOTIFY) {
		x1 = (ssize_t)ONCE(&f->log, wd, NOTIFYX_DELETE, "a/b/c/x1", NOTIFYX_EVENT_ISDIR, 0);
		BEFORE(&f->log, made, x1, "the merged deletion after its creation");
		BEFORE(&f->log, x1, moved, "the merged deletion before the rename");
	} else {
		x1 = (ssize_t)ONCE(&f->log, wd, NOTIFYX_DELETE, "m/c/x1", NOTIFYX_EVENT_ISDIR, 0);
		BEFORE(&f->log, x1, c, "a file deleted before its directory");
	}
	BEFORE(&f->log, c, m, "a directory deleted before its parent");
	COUNT(&f->log, wd, 8, "events (2 CREATE, RENAME, 5 DELETE)");
	conf_no_error(&f->log);
}
ON_BOTH(moved_then_removed)

int conf_deep_run(void)
{
	const struct CMUnitTest tests[] = {
		TEST_BOTH(deep_chain),
		TEST_BOTH(deep_too_long),
		TEST_BOTH(path_max_edges),
		TEST_BOTH(rm_rf_one),
		TEST_BOTH(rm_rf_overlap),
		TEST_BOTH(rm_rf_overlap_later),
		TEST_BOTH(moved_then_removed),
	};

	return cmocka_run_group_tests_name("conformance: deep paths, rm -rf", tests, NULL, NULL);
}
