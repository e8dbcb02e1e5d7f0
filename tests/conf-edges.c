/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Conformance test, the edges of API.md 0.2 (issue "Exact at the edges"):
 * entries deeper than PATH_MAX (absolute) whose path relative to the root
 * fits, and the ERROR when it does not; rm -rf of a tree under one and two
 * overlapping watches; a root moved, and a directory above it; umount -l of
 * a busy filesystem; ISDIR on DELETE_SELF and MOVE_SELF, MOVE_SELF of a
 * file; exchanges with a place the watch does not see (an excluded name, a
 * directory outside every watch) and inside one watch; watches that stay
 * independent; LIST reporting each entry once while the tree changes.
 *
 * Each case whose behaviour can differ per filesystem runs twice: in the
 * test's directory under /tmp ("_tmpdir") and on a private tmpfs mounted
 * there ("_tmpfs", root only: skipped with the reason otherwise).  Run from
 * conformance.c's main through conf_edges_run().
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "testutil.h"

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

int conf_edges_run(void);

#define F(state) ((struct tu_fix *)*(state))
#define APPEAR (NOTIFYX_CREATE | NOTIFYX_MOVED_IN | NOTIFYX_RENAME)
#define GO (NOTIFYX_DELETE | NOTIFYX_MOVED_OUT | NOTIFYX_RENAME)
#define SELF (NOTIFYX_DELETE_SELF | NOTIFYX_MOVE_SELF)

/* ---- helpers -------------------------------------------------------------- */

/* Remove everything below the directory open at dfd, through descriptors
 * (tu_rm_rf goes by absolute path, which a deep chain outgrows).  Errors are
 * ignored: a mount point stays (EBUSY) until tu_teardown unmounts it. */
static void rm_below(int dfd)
{
	DIR *d = fdopendir(dfd);
	struct dirent *e;

	if (!d) {
		close(dfd);
		return;
	}
	while ((e = readdir(d))) {
		int sub;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (!unlinkat(dirfd(d), e->d_name, 0))
			continue;
		sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0)
			continue;
		rm_below(sub);
		unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR);
	}
	closedir(d);
}

static int edge_teardown(void **state)
{
	struct tu_fix *f = *state;
	int fd;

	if (f && (fd = open(f->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0)
		rm_below(fd);
	return tu_teardown(state);
}

/* A private tmpfs at dir/fs (root only; the case is skipped otherwise). */
static const char *on_tmpfs(struct tu_fix *f)
{
	tu_require_root("mounting a private tmpfs");
	return tu_mount_tmpfs(f, "fs");
}

/* Each case that can differ per filesystem, on /tmp and on a tmpfs. */
#define ON_BOTH(name) \
	static void name##_tmpdir(void **state) { name(F(state), F(state)->dir); } \
	static void name##_tmpfs(void **state) { name(F(state), on_tmpfs(F(state))); }
#define TEST_BOTH(name) \
	cmocka_unit_test_setup_teardown(name##_tmpdir, tu_setup, edge_teardown), \
	cmocka_unit_test_setup_teardown(name##_tmpfs, tu_setup, edge_teardown)

static int open_dir(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		fail_msg("open %s: %s", path, strerror(errno));
	return fd;
}

/* The directory name below dfd opened (made first when mk); dfd is closed. */
static int down(int dfd, const char *name, int mk)
{
	int fd;

	if (mk && mkdirat(dfd, name, 0755) < 0)
		fail_msg("mkdirat %.20s...: %s", name, strerror(errno));
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		fail_msg("openat %.20s...: %s", name, strerror(errno));
	close(dfd);
	return fd;
}

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

/* a + "/" + b (or b when a is ""), malloc'd: deep paths outgrow tu_path. */
static char *join(const char *a, const char *b)
{
	char *s;

	if (asprintf(&s, "%s%s%s", a, *a ? "/" : "", b) < 0)
		fail_msg("out of memory");
	return s;
}

/* path with each run of 8 or more equal characters shortened to "c*N". */
static const char *short_path(const char *path, char *buf, size_t len)
{
	size_t o = 0;

	while (*path && o + 16 < len) {
		size_t n = strspn(path, (char[]){ *path, 0 });

		if (n >= 8)
			o += (size_t)snprintf(buf + o, len - o, "%c*%zu", *path, n);
		else
			o += (size_t)snprintf(buf + o, len - o, "%.*s", (int)n, path);
		path += n;
	}
	buf[o] = 0;
	return buf;
}

/* The events read so far, long names shortened (deep paths are thousands
 * of characters). */
static void dump(const struct tu_log *log, const char *title)
{
	size_t i;

	print_error("%s: %zu event(s) read:\n", title, log->n);
	for (i = 0; i < log->n; i++) {
		const struct tu_ev *e = &log->ev[i];
		char p[512], o[512] = "";

		print_error("  [%zu] wd=%d %-13s path=\"%s\"%s%s%s flags=%s cookie=%u error=%d\n", i,
			    e->wd, tu_mask_str(e->mask), short_path(e->path, p, sizeof p),
			    e->old_path ? " old_path=\"" : "",
			    e->old_path ? short_path(e->old_path, o, sizeof o) : "",
			    e->old_path ? "\"" : "", tu_flags_str(e->flags), e->cookie, e->error);
	}
}

/* Exactly one event (wd, mask, path) with (flags & fmask) == fwant; its index.
 * As TU_ONCE, with long names shortened in what it prints. */
#define ONCE(log, wd, mask, path, fmask, fwant) \
	once((log), (wd), (mask), (path), (fmask), (fwant), __LINE__)
static size_t once(const struct tu_log *log, int wd, uint32_t mask, const char *path,
		   uint32_t fmask, uint32_t fwant, int line)
{
	size_t c = tu_count(log, wd, mask, path);
	ssize_t i = tu_find(log, 0, wd, mask, path);
	char p[512] = "(any)";

	if (path)
		short_path(path, p, sizeof p);
	if (c != 1 || (log->ev[i].flags & fmask) != fwant) {
		dump(log, "actual");
		if (c != 1)
			fail_msg("line %d: expected exactly one wd=%d %s \"%s\", actual %zu", line, wd,
				 tu_mask_str(mask), p, c);
		fail_msg("line %d: wd=%d %s \"%s\": expected flags %s (of %s), actual %s", line, wd,
			 tu_mask_str(mask), p, tu_flags_str(fwant), tu_flags_str(fmask),
			 tu_flags_str(log->ev[i].flags));
	}
	return (size_t)i;
}

/* Wait for an event (wd, mask, path) at index >= from; its index.  As
 * TU_WAIT_FROM, with long names shortened in what it prints. */
#define WAIT_FROM(log, from, wd, mask, path) wait_from((log), (from), (wd), (mask), (path), __LINE__)
#define WAIT(log, wd, mask, path) WAIT_FROM((log), 0, (wd), (mask), (path))
static size_t wait_from(struct tu_log *log, size_t from, int wd, uint32_t mask, const char *path,
			int line)
{
	ssize_t i = tu_wait_from(log, from, wd, mask, path, TU_WAIT_MS);
	char p[512] = "(any)";

	if (i < 0) {
		if (path)
			short_path(path, p, sizeof p);
		dump(log, "actual");
		fail_msg("line %d: expected within %d ms (from event #%zu): wd=%d %s \"%s\"", line,
			 TU_WAIT_MS, from, wd, tu_mask_str(mask), p);
	}
	return (size_t)i;
}

/* Events #a before #b, both found. */
#define BEFORE(log, a, b, what) before((log), (a), (b), (what), __LINE__)
static void before(const struct tu_log *log, ssize_t a, ssize_t b, const char *what, int line)
{
	if (a < 0 || b < 0 || a >= b) {
		dump(log, "actual");
		fail_msg("line %d: expected %s (event #%zd before event #%zd)", line, what, a, b);
	}
}

/* The initial listing of a LIST watch is complete: its SYNC (API.md 0.2)
 * when the header has it, else the handle quiet. */
static ssize_t listed(struct tu_log *log, int wd)
{
#ifdef NOTIFYX_SYNC
	return (ssize_t)WAIT(log, wd, NOTIFYX_SYNC, "");
#else
	(void)wd;
	tu_settle(log);
	return (ssize_t)log->n;
#endif
}

/* wd has n events, SYNC not counted. */
#define COUNT(log, wd, n, what) count((log), (wd), (n), (what), __LINE__)
static void count(const struct tu_log *log, int wd, size_t n, const char *what, int line)
{
	size_t c = tu_count_wd(log, wd);

#ifdef NOTIFYX_SYNC
	c -= tu_count(log, wd, NOTIFYX_SYNC, NULL);
#endif
	if (c != n) {
		dump(log, "actual");
		fail_msg("line %d: wd %d: expected %zu events (%s), actual %zu", line, wd, n, what, c);
	}
}

/* No ERROR on any watch. */
static void no_error(const struct tu_log *log)
{
	ssize_t i = tu_find(log, 0, TU_ANY_WD, NOTIFYX_ERROR, NULL);

	if (i >= 0) {
		dump(log, "actual");
		fail_msg("ERROR (event #%zd, %s)", i, strerrorname_np(log->ev[i].error));
	}
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
		p = join(rel, long_name((char)(c + i), LONG));
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
		dfd = down(dfd, long_name((char)(c + i), LONG), mk);
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

	p = join("deep", root);
	free(root);
	root = join(base, p);
	free(p);
	fd = down(open_dir(base), "deep", 1);
	close(chain_at(fd, 'A', 12, 1)); /* the root is the 12th level: its "f" is listed */
	assert_true(strlen(root) < PATH_MAX - 2 * LONG);
	close(chain_at(open_dir(root), 'a', 6, 1));

	list = tu_add(&f->log, root, NOTIFYX_CREATE | NOTIFYX_DELETE,
		      NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_LIST);
	plain = tu_add(&f->log, root, NOTIFYX_CREATE | NOTIFYX_DELETE, NOTIFYX_WATCH_RECURSIVE);
	sync = (size_t)listed(&f->log, list);
	tu_settle(&f->log);
	for (i = 1; i <= 6; i++) {
		char *file;

		rel = chain_rel('a', i);
		file = join(rel, "f");
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
	fd = chain_at(open_dir(root), 'a', 6, 0);
	newf = join(bot, "new");
	sub = join(bot, "n");
	subf = join(sub, "g");
	touch_at(fd, "new");
	WAIT(&f->log, plain, NOTIFYX_CREATE, newf);
	fd = down(fd, "n", 1);
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
	fd = chain_at(open_dir(root), 'a', 6, 0);
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
	no_error(&f->log);
	free(root);
	free(bot);
	free(newf);
	free(sub);
	free(subf);
}
ON_BOTH(deep_chain)

/* Below a short root, a chain of 17 long names: the 16th directory's
 * relative path fits (about 4000 characters), the 17th's does not.  Each
 * watch gets an ERROR (an errno in error) naming the 16th, the deepest that
 * fits, and nothing that does not fit; LIST lists what fits.  A directory
 * made later at the same depth is an ERROR naming the 16th again. */
static void deep_too_long(struct tu_fix *f, const char *base)
{
	const char *root = tu_path(base, "r");
	char *fits = chain_rel('a', 16), *file = join(fits, "f");
	int fd, list, plain, i;
	size_t k;

	tu_mkdir(root);
	close(chain_at(open_dir(root), 'a', 17, 1));
	assert_true(strlen(fits) < PATH_MAX && strlen(fits) + 1 + LONG >= PATH_MAX);
	list = tu_add(&f->log, root, NOTIFYX_CREATE | NOTIFYX_DELETE,
		      NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_LIST);
	plain = tu_add(&f->log, root, NOTIFYX_CREATE | NOTIFYX_DELETE, NOTIFYX_WATCH_RECURSIVE);
	listed(&f->log, list);
	WAIT(&f->log, list, NOTIFYX_ERROR, NULL);
	WAIT(&f->log, plain, NOTIFYX_ERROR, NULL);
	tu_settle(&f->log);
	for (i = 0; i < 2; i++) {
		int wd = i ? plain : list;

		k = ONCE(&f->log, wd, NOTIFYX_ERROR, NULL, 0, 0);
		TU_STREQ("ERROR path: the deepest directory that fits", fits, f->log.ev[k].path);
		if (!f->log.ev[k].error)
			fail_msg("ERROR without an errno");
		print_message("  wd %d: ERROR %s (%d characters)\n", wd,
			      strerrorname_np(f->log.ev[k].error), (int)strlen(fits));
	}
	ONCE(&f->log, list, NOTIFYX_CREATE, fits, NOTIFYX_EVENT_ISDIR, NOTIFYX_EVENT_ISDIR);
	ONCE(&f->log, list, NOTIFYX_CREATE, file, NOTIFYX_EVENT_ISDIR, 0);
	COUNT(&f->log, list, 33, "events of the LIST watch (32 entries, ERROR)");
	COUNT(&f->log, plain, 1, "events of the plain watch (ERROR)");

	/* Later: a new directory that does not fit, beside the 17th. */
	k = f->log.n;
	fd = chain_at(open_dir(root), 'a', 16, 0);
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

static void rm_rf_one(struct tu_fix *f, const char *base)
{
	rm_rf_tree(f, base, 0);
}
ON_BOTH(rm_rf_one)

static void rm_rf_overlap(struct tu_fix *f, const char *base)
{
	rm_rf_tree(f, base, 1);
}
ON_BOTH(rm_rf_overlap)

static void rm_rf_overlap_later(struct tu_fix *f, const char *base)
{
	rm_rf_tree(f, base, 2);
}
ON_BOTH(rm_rf_overlap_later)

/* ---- a moved root ------------------------------------------------------------ */

/* A recursive root renamed, then the directory above it: the watch goes on
 * at the new place.  mkdir -p and files inside are reported with paths
 * relative to the root, a directory moved in is listed (LIST), never an
 * ERROR, and the one MOVE_SELF carries ISDIR. */
static void moved_root(struct tu_fix *f, const char *base)
{
	static const struct { const char *path; uint32_t isdir; } made[] = {
		{ "x", NOTIFYX_EVENT_ISDIR }, { "x/y", NOTIFYX_EVENT_ISDIR },
		{ "x/y/z", NOTIFYX_EVENT_ISDIR }, { "x/f", 0 }, { "x/y/z/f", 0 }, { "s/g", 0 },
	};
	const char *q = tu_path(base, "q");
	int plain, list;
	size_t i;
	uint32_t in;

	tu_mkdir(tu_path(base, "p"));
	tu_mkdir(tu_path(base, "p/root"));
	tu_mkdir(tu_path(base, "p/root/s"));
	tu_mkdir(tu_path(base, "out"));
	tu_mkdir(tu_path(base, "out/m"));
	tu_touch(tu_path(base, "out/m/k"));
	plain = tu_add(&f->log, tu_path(base, "p/root"), APPEAR | GO | NOTIFYX_MOVE_SELF,
		       NOTIFYX_WATCH_RECURSIVE);
	list = tu_add(&f->log, tu_path(base, "p/root"), APPEAR | GO | NOTIFYX_MOVE_SELF,
		      NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_LIST);
	listed(&f->log, list);
	tu_rename(tu_path(base, "p/root"), tu_path(base, "p/root2"));
	WAIT(&f->log, plain, NOTIFYX_MOVE_SELF, "");
	WAIT(&f->log, list, NOTIFYX_MOVE_SELF, "");
	tu_rename(tu_path(base, "p"), q);
	tu_settle(&f->log); /* a scanning backend checks its roots */
	tu_log_clear(&f->log);
	tu_mkdir(tu_path(q, "root2/x"));
	tu_mkdir(tu_path(q, "root2/x/y"));
	tu_mkdir(tu_path(q, "root2/x/y/z"));
	tu_touch(tu_path(q, "root2/x/f"));
	tu_touch(tu_path(q, "root2/x/y/z/f"));
	tu_touch(tu_path(q, "root2/s/g"));
	WAIT(&f->log, plain, NOTIFYX_CREATE, "x/y/z/f");
	WAIT(&f->log, list, NOTIFYX_CREATE, "x/y/z/f");
	tu_rename(tu_path(base, "out/m"), tu_path(q, "root2/m"));
	in = f->log.scanning ? NOTIFYX_CREATE : NOTIFYX_MOVED_IN;
	WAIT(&f->log, plain, in, "m");
	WAIT(&f->log, list, NOTIFYX_CREATE, "m/k");
	tu_settle(&f->log);
	no_error(&f->log);
	for (i = 0; i < sizeof made / sizeof made[0]; i++) {
		ONCE(&f->log, plain, NOTIFYX_CREATE, made[i].path, NOTIFYX_EVENT_ISDIR,
			made[i].isdir);
		ONCE(&f->log, list, NOTIFYX_CREATE, made[i].path, NOTIFYX_EVENT_ISDIR,
			made[i].isdir);
	}
	ONCE(&f->log, plain, in, "m", NOTIFYX_EVENT_ISDIR, NOTIFYX_EVENT_ISDIR);
	ONCE(&f->log, list, in, "m", NOTIFYX_EVENT_ISDIR, NOTIFYX_EVENT_ISDIR);
	ONCE(&f->log, list, NOTIFYX_CREATE, "m/k", NOTIFYX_EVENT_ISDIR | NOTIFYX_EVENT_SYNTHETIC,
		NOTIFYX_EVENT_SYNTHETIC);
	if (!f->log.scanning)
		TU_NONE(&f->log, plain, 0, "m/k"); /* implied by its MOVED_IN */
	TU_NONE(&f->log, TU_ANY_WD, NOTIFYX_IGNORED, NULL);
	/* Deletions below the moved root too. */
	tu_unlink(tu_path(q, "root2/x/y/z/f"));
	WAIT(&f->log, plain, NOTIFYX_DELETE, "x/y/z/f");
	WAIT(&f->log, list, NOTIFYX_DELETE, "x/y/z/f");
}
ON_BOTH(moved_root)

/* MOVE_SELF once, with ISDIR, when the root is renamed (checked apart from
 * the rest: moved_root clears its log after it). */
static void moved_root_self(struct tu_fix *f, const char *base)
{
	int wd;

	tu_mkdir(tu_path(base, "p"));
	tu_mkdir(tu_path(base, "p/root"));
	wd = tu_add(&f->log, tu_path(base, "p/root"), NOTIFYX_MOVE_SELF | NOTIFYX_CREATE,
		    NOTIFYX_WATCH_RECURSIVE);
	tu_rename(tu_path(base, "p/root"), tu_path(base, "p/root2"));
	WAIT(&f->log, wd, NOTIFYX_MOVE_SELF, "");
	tu_rename(tu_path(base, "p"), tu_path(base, "q"));
	tu_touch(tu_path(base, "q/root2/f"));
	WAIT(&f->log, wd, NOTIFYX_CREATE, "f");
	tu_settle(&f->log);
	ONCE(&f->log, wd, NOTIFYX_MOVE_SELF, "", NOTIFYX_EVENT_ISDIR, NOTIFYX_EVENT_ISDIR);
	COUNT(&f->log, wd, 2, "events (MOVE_SELF, CREATE f)");
	TU_STREQ("notifyx_watch_path after MOVE_SELF", tu_path(base, "p/root"),
		 notifyx_watch_path(f->nx, wd));
}
ON_BOTH(moved_root_self)

/* ---- umount -l of a busy filesystem ------------------------------------------ */

/* The test's own tmpfs, a file inside held open: umount -l takes it out of
 * the mount namespace at once, and each watch on it gets UNMOUNT then
 * IGNORED (the kernel's inotify waits for the last descriptor). */
static void unmount_lazy_busy(void **state)
{
	struct tu_fix *f = F(state);
	const char *m;
	int wd, rec, sub, held;

	tu_require_root("mounting a private tmpfs");
	m = tu_mount_tmpfs(f, "mnt");
	tu_mkdir(tu_path(m, "d"));
	held = open(tu_path(m, "d/held"), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	assert_true(held >= 0);
	wd = tu_add(&f->log, m, NOTIFYX_CREATE, 0);
	rec = tu_add(&f->log, m, NOTIFYX_CREATE, NOTIFYX_WATCH_RECURSIVE);
	sub = tu_add(&f->log, tu_path(m, "d"), NOTIFYX_CREATE, 0);
	tu_touch(tu_path(m, "f"));
	WAIT(&f->log, wd, NOTIFYX_CREATE, "f");
	if (umount2(m, 0) == 0 || errno != EBUSY)
		fail_msg("umount of the busy tmpfs: expected EBUSY (%s)", strerror(errno));
	assert_int_equal(umount2(m, MNT_DETACH), 0);
	WAIT(&f->log, wd, NOTIFYX_IGNORED, "");
	WAIT(&f->log, rec, NOTIFYX_IGNORED, "");
	WAIT(&f->log, sub, NOTIFYX_IGNORED, "");
	tu_settle(&f->log);
	close(held);
	TU_SEQ(&f->log, wd, NOTIFYX_CREATE, "f", NOTIFYX_UNMOUNT, "", NOTIFYX_IGNORED, "", 0u);
	TU_SEQ(&f->log, rec, NOTIFYX_CREATE, "f", NOTIFYX_UNMOUNT, "", NOTIFYX_IGNORED, "", 0u);
	TU_SEQ(&f->log, sub, NOTIFYX_UNMOUNT, "", NOTIFYX_IGNORED, "", 0u);
	TU_ERRNO("rm_watch after UNMOUNT", notifyx_rm_watch(f->nx, rec) == -1, EINVAL);
}

/* ---- self events ----------------------------------------------------------------- */

/* DELETE_SELF and MOVE_SELF of a directory root carry ISDIR (plain and
 * recursive watches); a watched file renamed is MOVE_SELF without ISDIR,
 * and removed DELETE_SELF without ISDIR. */
static void self_isdir(struct tu_fix *f, const char *base)
{
	const char *d = tu_path(base, "d"), *file = tu_path(base, "file");
	int plain, rec, fw;

	tu_require_events(f->nx, SELF);
	tu_mkdir(d);
	tu_mkdir(tu_path(base, "d/s"));
	tu_write(file, "x");
	plain = tu_add(&f->log, d, SELF, 0);
	rec = tu_add(&f->log, d, SELF, NOTIFYX_WATCH_RECURSIVE);
	fw = tu_add(&f->log, file, SELF, 0);
	tu_rename(d, tu_path(base, "d2"));
	tu_rename(file, tu_path(base, "file2"));
	WAIT(&f->log, plain, NOTIFYX_MOVE_SELF, "");
	WAIT(&f->log, rec, NOTIFYX_MOVE_SELF, "");
	WAIT(&f->log, fw, NOTIFYX_MOVE_SELF, "");
	tu_settle(&f->log);
	tu_rm_rf(tu_path(base, "d2"));
	tu_unlink(tu_path(base, "file2"));
	WAIT(&f->log, plain, NOTIFYX_IGNORED, "");
	WAIT(&f->log, rec, NOTIFYX_IGNORED, "");
	WAIT(&f->log, fw, NOTIFYX_IGNORED, "");
	tu_settle(&f->log);
	TU_SEQ(&f->log, plain, NOTIFYX_MOVE_SELF, "", NOTIFYX_DELETE_SELF, "", NOTIFYX_IGNORED, "", 0u);
	TU_SEQ(&f->log, rec, NOTIFYX_MOVE_SELF, "", NOTIFYX_DELETE_SELF, "", NOTIFYX_IGNORED, "", 0u);
	TU_SEQ(&f->log, fw, NOTIFYX_MOVE_SELF, "", NOTIFYX_DELETE_SELF, "", NOTIFYX_IGNORED, "", 0u);
	ONCE(&f->log, plain, NOTIFYX_MOVE_SELF, "", NOTIFYX_EVENT_ISDIR, NOTIFYX_EVENT_ISDIR);
	ONCE(&f->log, plain, NOTIFYX_DELETE_SELF, "", NOTIFYX_EVENT_ISDIR, NOTIFYX_EVENT_ISDIR);
	ONCE(&f->log, rec, NOTIFYX_MOVE_SELF, "", NOTIFYX_EVENT_ISDIR, NOTIFYX_EVENT_ISDIR);
	ONCE(&f->log, rec, NOTIFYX_DELETE_SELF, "", NOTIFYX_EVENT_ISDIR, NOTIFYX_EVENT_ISDIR);
	ONCE(&f->log, fw, NOTIFYX_MOVE_SELF, "", NOTIFYX_EVENT_ISDIR, 0);
	ONCE(&f->log, fw, NOTIFYX_DELETE_SELF, "", NOTIFYX_EVENT_ISDIR, 0);
}
ON_BOTH(self_isdir)

/* A watched file renamed into another directory and its name made again at
 * once (how editors save): MOVE_SELF, not ISDIR; the watch follows the
 * moved file, not the new one at the old name. */
static void self_file_moved(struct tu_fix *f, const char *base)
{
	const char *file = tu_path(base, "file"), *moved = tu_path(base, "d/file.old");
	int wd;
	size_t from;

	tu_require_events(f->nx, SELF | NOTIFYX_MODIFY);
	tu_mkdir(tu_path(base, "d"));
	tu_write(file, "one");
	wd = tu_add(&f->log, file, SELF | NOTIFYX_MODIFY, 0);
	tu_rename(file, moved);
	tu_write(file, "new file at the old name");
	WAIT(&f->log, wd, NOTIFYX_MOVE_SELF, "");
	tu_settle(&f->log);
	ONCE(&f->log, wd, NOTIFYX_MOVE_SELF, "", NOTIFYX_EVENT_ISDIR, 0);
	TU_NONE(&f->log, wd, NOTIFYX_MODIFY, NULL);
	tu_write(file, "the new file again, longer");
	tu_settle(&f->log);
	TU_NONE(&f->log, wd, NOTIFYX_MODIFY, NULL);
	from = f->log.n;
	tu_write(moved, "the watched file, written after its move");
	WAIT_FROM(&f->log, from, wd, NOTIFYX_MODIFY, "");
	tu_settle(&f->log);
	TU_NONE(&f->log, wd, NOTIFYX_DELETE_SELF, NULL);
	TU_NONE(&f->log, wd, NOTIFYX_IGNORED, NULL);
	TU_STREQ("notifyx_watch_path after MOVE_SELF", file, notifyx_watch_path(f->nx, wd));
}
ON_BOTH(self_file_moved)

/* ---- a small mirror (API.md "Mirroring a tree") ------------------------------ */

/* A list of entries (path, directory or not): the tree on disk, or the
 * mirror flattened, to compare. */
struct mlist {
	struct ment {
		char *path;
		int isdir;
	} *e;
	size_t n, cap;
};

static void l_free(struct mlist *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->e[i].path);
	free(l->e);
	memset(l, 0, sizeof *l);
}

static void l_put(struct mlist *l, const char *path, int isdir)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 64;
		l->e = realloc(l->e, l->cap * sizeof *l->e);
		assert_non_null(l->e);
	}
	l->e[l->n].path = strdup(path);
	assert_non_null(l->e[l->n].path);
	l->e[l->n++].isdir = isdir;
}

/* The mirror: a tree of names, so that moving a directory is cheap. */
struct mnode {
	char *name;
	int isdir;
	struct mnode *parent, **kids;
	size_t nk, kcap;
};

struct mirror {
	struct mnode root;
	size_t anomalies; /* events that could not be applied (a parent missing) */
};

static void n_free(struct mnode *n)
{
	size_t i;

	for (i = 0; i < n->nk; i++)
		n_free(n->kids[i]);
	free(n->kids);
	free(n->name);
	free(n);
}

static void m_free(struct mirror *m)
{
	size_t i;

	for (i = 0; i < m->root.nk; i++)
		n_free(m->root.kids[i]);
	free(m->root.kids);
	memset(&m->root, 0, sizeof m->root);
}

static struct mnode *n_kid(const struct mnode *n, const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < n->nk; i++)
		if (!strncmp(n->kids[i]->name, name, len) && !n->kids[i]->name[len])
			return n->kids[i];
	return NULL;
}

static void n_attach(struct mnode *parent, struct mnode *n)
{
	if (parent->nk == parent->kcap) {
		parent->kcap = parent->kcap ? 2 * parent->kcap : 8;
		parent->kids = realloc(parent->kids, parent->kcap * sizeof *parent->kids);
		assert_non_null(parent->kids);
	}
	parent->kids[parent->nk++] = n;
	n->parent = parent;
}

static void n_detach(struct mnode *n)
{
	struct mnode *p = n->parent;
	size_t i;

	for (i = 0; i < p->nk; i++)
		if (p->kids[i] == n) {
			p->kids[i] = p->kids[--p->nk];
			break;
		}
	n->parent = NULL;
}

/* The node at path ("" is the root), or NULL; with parent_only, the node of
 * its directory, *last set to its name. */
static struct mnode *m_walk(struct mirror *m, const char *path, int parent_only, const char **last)
{
	struct mnode *n = &m->root;

	while (n && *path) {
		size_t len = strcspn(path, "/");

		if (parent_only && !path[len]) {
			*last = path;
			return n;
		}
		n = n_kid(n, path, len);
		path += len + !!path[len];
	}
	return n;
}

static struct mnode *m_find(struct mirror *m, const char *path)
{
	return m_walk(m, path, 0, NULL);
}

static void m_remove(struct mirror *m, const char *path)
{
	struct mnode *n = m_find(m, path);

	if (!n)
		return;
	if (n == &m->root) {
		m_free(m);
		return;
	}
	n_detach(n);
	n_free(n);
}

/* path exists now as a directory or not; what it held stays if its type did. */
static void m_add(struct mirror *m, const char *path, int isdir)
{
	const char *name;
	struct mnode *p = m_walk(m, path, 1, &name), *n;

	if (!p || !*path) {
		m->anomalies++;
		return;
	}
	n = n_kid(p, name, strlen(name));
	if (n && n->isdir == isdir)
		return;
	if (n) {
		n_detach(n);
		n_free(n);
	}
	n = calloc(1, sizeof *n);
	assert_non_null(n);
	n->name = strdup(name);
	assert_non_null(n->name);
	n->isdir = isdir;
	n_attach(p, n);
}

/* Move the node n to path (whose directory must be known). */
static void m_put_at(struct mirror *m, struct mnode *n, const char *path)
{
	const char *name;
	struct mnode *p = m_walk(m, path, 1, &name);

	if (!p) {
		m->anomalies++;
		n_free(n);
		return;
	}
	free(n->name);
	n->name = strdup(name);
	assert_non_null(n->name);
	n_attach(p, n);
}

/* Apply one event as API.md "Mirroring a tree" says. */
static void m_apply(struct mirror *m, const struct tu_ev *ev)
{
	int isdir = !!(ev->flags & NOTIFYX_EVENT_ISDIR);
	struct mnode *a, *b;

	switch (ev->mask) {
	case NOTIFYX_CREATE:
	case NOTIFYX_MOVED_IN:
		m_add(m, ev->path, isdir);
		break;
	case NOTIFYX_DELETE:
	case NOTIFYX_MOVED_OUT:
		m_remove(m, ev->path);
		break;
	case NOTIFYX_RENAME:
		a = m_find(m, ev->old_path);
		if (ev->flags & NOTIFYX_EVENT_EXCHANGE) {
			b = m_find(m, ev->path);
			if (!a || !b) {
				m->anomalies++;
				break;
			}
			n_detach(a);
			n_detach(b);
			m_put_at(m, a, ev->path);
			m_put_at(m, b, ev->old_path);
		} else if (a) {
			n_detach(a);
			m_remove(m, ev->path);
			m_put_at(m, a, ev->path);
		} else {
			m_add(m, ev->path, isdir);
		}
		break;
	case NOTIFYX_DELETE_SELF:
		m_free(m);
		break;
	default:
		break;
	}
}

/* The mirror below n as a list of paths below rel. */
static void m_flatten(const struct mnode *n, const char *rel, struct mlist *out)
{
	size_t i;

	for (i = 0; i < n->nk; i++) {
		char *p = join(rel, n->kids[i]->name);

		l_put(out, p, n->kids[i]->isdir);
		m_flatten(n->kids[i], p, out);
		free(p);
	}
}

/* The tree below dfd (closed here), names matching skip left out and not
 * entered, into m with paths below rel. */
static void m_scan(struct mlist *m, int dfd, const char *rel, const char *skip)
{
	DIR *d = fdopendir(dfd);
	struct dirent *de;

	assert_non_null(d);
	while ((de = readdir(d))) {
		struct stat st;
		char *p;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    (skip && !fnmatch(skip, de->d_name, 0)))
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			fail_msg("fstatat %s: %s", de->d_name, strerror(errno));
		p = join(rel, de->d_name);
		l_put(m, p, S_ISDIR(st.st_mode));
		if (S_ISDIR(st.st_mode))
			m_scan(m, down(dup(dirfd(d)), de->d_name, 0), p, skip);
		free(p);
	}
	closedir(d);
}

static int by_path(const void *a, const void *b)
{
	return strcmp(((const struct ment *)a)->path, ((const struct ment *)b)->path);
}

/* The mirror made of wd's events equals the tree at root (names matching
 * skip left out). */
static void mirror_equals(const struct tu_log *log, int wd, const char *root, const char *skip,
			  const char *what)
{
	struct mirror mt = { 0 };
	struct mlist m = { 0 }, disk = { 0 };
	size_t i, j, bad = 0;

	for (i = 0; i < log->n; i++)
		if (log->ev[i].wd == wd)
			m_apply(&mt, &log->ev[i]);
	if (mt.anomalies) {
		dump(log, "actual");
		fail_msg("%s: %zu events of wd %d could not be applied (their directory was not in "
			 "the mirror, or an exchange's side was missing)", what, mt.anomalies, wd);
	}
	m_flatten(&mt.root, "", &m);
	m_free(&mt);
	m_scan(&disk, open_dir(root), "", skip);
	qsort(m.e, m.n, sizeof *m.e, by_path);
	qsort(disk.e, disk.n, sizeof *disk.e, by_path);
	for (i = j = 0; i < m.n || j < disk.n;) {
		int c = i == m.n ? 1 : j == disk.n ? -1 : strcmp(m.e[i].path, disk.e[j].path);

		if (c < 0) {
			print_error("  only in the mirror: %s%s\n", m.e[i].path, m.e[i].isdir ? "/" : "");
			i++, bad++;
		} else if (c > 0) {
			print_error("  only on disk: %s%s\n", disk.e[j].path, disk.e[j].isdir ? "/" : "");
			j++, bad++;
		} else {
			if (m.e[i].isdir != disk.e[j].isdir) {
				print_error("  %s: a %s in the mirror, a %s on disk\n", m.e[i].path,
					    m.e[i].isdir ? "directory" : "non-directory",
					    disk.e[j].isdir ? "directory" : "non-directory");
				bad++;
			}
			i++, j++;
		}
	}
	l_free(&m);
	l_free(&disk);
	if (bad) {
		dump(log, "actual");
		fail_msg("%s: the mirror of wd %d differs from the tree in %zu entries", what, wd, bad);
	}
}

/* ---- exchanges with what the watch does not see ------------------------------ */

static void rename_exchange(const char *a, const char *b)
{
	if (syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) < 0) {
		if (errno == EINVAL || errno == ENOSYS) {
			print_message("[ SKIP     ] renameat2(RENAME_EXCHANGE) %s: %s\n", a,
				      strerror(errno));
			skip();
		}
		fail_msg("renameat2(%s, %s, RENAME_EXCHANGE): %s", a, b, strerror(errno));
	}
}


enum unseen { EXCL_FILES, EXCL_DIRS, EXCL_FILE_DIR, OUT_DIRS, OUT_DIR_FILE };

/* Make a directory (with entries in, in2/deeper) or a file at path. */
static void make_entry(const char *path, int dir, const char *in)
{
	if (!dir) {
		tu_write(path, in);
		return;
	}
	tu_mkdir(path);
	tu_touch(tu_path(path, in));
	tu_mkdir(tu_path(path, tu_fmt("%s2", in)));
	tu_touch(tu_path(path, tu_fmt("%s2/deeper", in)));
}

/* The name "site" in the watch exchanged with a place the watch does not
 * see: "site.tmp" beside it, hidden by notifyx_exclude("*.tmp"), or
 * "out/site" outside every watch.  inotify and fanotify: MOVED_OUT then
 * MOVED_IN of "site", cookie 0 each, ISDIR of the entry each describes, and
 * with LIST the arrival's contents; nothing of the unseen name.  Every
 * backend: a mirror (LIST) and a plain recursive watch's events keep the
 * mirror exact; the new "site" is watched, the old one not. */
static void exchange_unseen(struct tu_fix *f, const char *base, enum unseen how)
{
	const char *w = tu_path(base, "w"), *site = tu_path(base, "w/site");
	const char *other = how >= OUT_DIRS ? tu_path(base, "out/site") : tu_path(base, "w/site.tmp");
	int old_dir = how != EXCL_FILES;
	int new_dir = how == EXCL_DIRS || how == EXCL_FILE_DIR || how == OUT_DIRS;
	const char *skip = how < OUT_DIRS ? "*.tmp" : NULL;
	int list, plain, k;
	size_t from;

	if (how == EXCL_FILE_DIR)
		old_dir = 0;
	tu_mkdir(w);
	tu_mkdir(tu_path(base, "out"));
	tu_touch(tu_path(base, "w/stay"));
	make_entry(site, old_dir, "old");
	make_entry(other, new_dir, "new");
	if (skip)
		assert_int_equal(notifyx_exclude(f->nx, skip), 0);
	list = tu_add(&f->log, w, APPEAR | GO, NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_LIST);
	plain = tu_add(&f->log, w, APPEAR | GO, NOTIFYX_WATCH_RECURSIVE);
	listed(&f->log, list);
	tu_settle(&f->log);
	from = f->log.n;
	rename_exchange(other, site);
	WAIT_FROM(&f->log, from, plain, 0, "site");
	WAIT_FROM(&f->log, from, list, 0, "site");
	tu_settle(&f->log);
	for (k = 0; k < 2; k++) {
		int wd = k ? plain : list;
		size_t i, n = 0;

		if (wd == list) /* a plain watch's mirror would lack what moved in */
			mirror_equals(&f->log, wd, w, skip, "the mirror after the exchange");
		for (i = from; i < f->log.n; i++) {
			const struct tu_ev *e = &f->log.ev[i];

			if (e->wd != wd)
				continue;
			if (strncmp(e->path, "site", 4) || (e->path[4] && e->path[4] != '/')) {
				dump(&f->log, "actual");
				fail_msg("event #%zu of wd %d about an entry the exchange did not touch", i, wd);
			}
			if (f->log.scanning)
				continue; /* the replacement rule: the mirror is what counts */
			if (n == 0 || n == 1) {
				uint32_t mask = n ? NOTIFYX_MOVED_IN : NOTIFYX_MOVED_OUT;
				int dir = n ? new_dir : old_dir;

				if (e->mask != mask || strcmp(e->path, "site") || e->cookie ||
				    !!(e->flags & NOTIFYX_EVENT_ISDIR) != dir) {
					dump(&f->log, "actual");
					fail_msg("wd %d, event %zu after the exchange (#%zu): expected %s \"site\" "
						 "cookie 0 %s", wd, n + 1, i, tu_mask_str(mask),
						 dir ? "ISDIR" : "(not ISDIR)");
				}
			} else if (wd == plain || e->mask != NOTIFYX_CREATE ||
				   !(e->flags & NOTIFYX_EVENT_SYNTHETIC)) {
				dump(&f->log, "actual");
				fail_msg("wd %d: event #%zu after MOVED_OUT and MOVED_IN of \"site\": only a "
					 "LIST watch gets more (the arrival's contents)", wd, i);
			}
			n++;
		}
		if (!f->log.scanning && n < 2) {
			dump(&f->log, "actual");
			fail_msg("wd %d: %zu event(s) after the exchange: expected MOVED_OUT then MOVED_IN",
				 wd, n);
		}
	}
	/* The arrival is watched, what left is not. */
	from = f->log.n;
	if (new_dir)
		tu_touch(tu_path(site, "later"));
	if (old_dir)
		tu_touch(tu_path(other, "later"));
	tu_touch(tu_path(w, "mark"));
	WAIT_FROM(&f->log, from, plain, NOTIFYX_CREATE, "mark");
	tu_settle(&f->log);
	for (k = 0; k < 2; k++) {
		int wd = k ? plain : list;
		size_t i;

		if (new_dir)
			ONCE(&f->log, wd, NOTIFYX_CREATE, "site/later", NOTIFYX_EVENT_ISDIR, 0);
		for (i = from; i < f->log.n; i++)
			if (f->log.ev[i].wd == wd && strcmp(f->log.ev[i].path, "mark") &&
			    strcmp(f->log.ev[i].path, "site/later")) {
				dump(&f->log, "actual");
				fail_msg("wd %d: event #%zu about the entry that left", wd, i);
			}
		if (wd == list)
			mirror_equals(&f->log, wd, w, skip, "after more changes");
	}
	no_error(&f->log);
}
static void exchange_excluded_files(struct tu_fix *f, const char *base)
{
	exchange_unseen(f, base, EXCL_FILES);
}
ON_BOTH(exchange_excluded_files)

static void exchange_excluded_dirs(struct tu_fix *f, const char *base)
{
	exchange_unseen(f, base, EXCL_DIRS);
}
ON_BOTH(exchange_excluded_dirs)

static void exchange_excluded_file_dir(struct tu_fix *f, const char *base)
{
	exchange_unseen(f, base, EXCL_FILE_DIR);
}
ON_BOTH(exchange_excluded_file_dir)

static void exchange_outside_dirs(struct tu_fix *f, const char *base)
{
	exchange_unseen(f, base, OUT_DIRS);
}
ON_BOTH(exchange_outside_dirs)

static void exchange_outside_dir_file(struct tu_fix *f, const char *base)
{
	exchange_unseen(f, base, OUT_DIR_FILE);
}
ON_BOTH(exchange_outside_dir_file)

/* ---- exchanges inside one watch --------------------------------------------- */

/* Two directories (with contents) exchanged inside one recursive watch, with
 * and without LIST (beside each other, or the plain watch alone): one RENAME with EXCHANGE and ISDIR; both stay watched
 * under their new names; the LIST watch's mirror equals the tree. */
static void exchange_dirs(struct tu_fix *f, const char *base, int alone)
{
	const char *w = tu_path(base, "w");
	int list = 0, plain, k;
	size_t from;

	tu_mkdir(w);
	tu_mkdir(tu_path(w, "x"));
	make_entry(tu_path(w, "x/a"), 1, "in");
	make_entry(tu_path(w, "b"), 1, "other");
	if (!alone)
		list = tu_add(&f->log, w, APPEAR | GO, NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_LIST);
	plain = tu_add(&f->log, w, APPEAR | GO, NOTIFYX_WATCH_RECURSIVE);
	if (!alone)
		listed(&f->log, list);
	tu_settle(&f->log);
	from = f->log.n;
	rename_exchange(tu_path(w, "x/a"), tu_path(w, "b"));
	WAIT_FROM(&f->log, from, plain, NOTIFYX_RENAME, NULL);
	if (!alone)
		WAIT_FROM(&f->log, from, list, NOTIFYX_RENAME, NULL);
	tu_settle(&f->log);
	for (k = alone; k < 2; k++) {
		int wd = k ? plain : list;
		size_t i = ONCE(&f->log, wd, NOTIFYX_RENAME, NULL,
				NOTIFYX_EVENT_EXCHANGE | NOTIFYX_EVENT_ISDIR,
				NOTIFYX_EVENT_EXCHANGE | NOTIFYX_EVENT_ISDIR);
		const struct tu_ev *e = &f->log.ev[i];

		if (!(!strcmp(e->path, "b") && !strcmp(e->old_path, "x/a")) &&
		    !(!strcmp(e->path, "x/a") && !strcmp(e->old_path, "b"))) {
			dump(&f->log, "actual");
			fail_msg("exchange of x/a and b reported as RENAME \"%s\" <- \"%s\"", e->path,
				 e->old_path);
		}
		COUNT(&f->log, wd, (size_t)(tu_find(&f->log, 0, wd, NOTIFYX_RENAME, NULL) >= 0) +
					   tu_count(&f->log, wd, NOTIFYX_CREATE, NULL),
		      "one RENAME for the exchange, nothing else");
	}
	if (!alone)
		mirror_equals(&f->log, list, w, NULL, "after the exchange");
	/* Each is watched under its new name. */
	from = f->log.n;
	tu_touch(tu_path(w, "b/new-b"));
	tu_touch(tu_path(w, "x/a/new-a"));
	tu_touch(tu_path(w, "b/in2/new-deep"));
	WAIT_FROM(&f->log, from, plain, NOTIFYX_CREATE, "b/in2/new-deep");
	if (!alone)
		WAIT_FROM(&f->log, from, list, NOTIFYX_CREATE, "b/in2/new-deep");
	tu_settle(&f->log);
	for (k = alone; k < 2; k++) {
		int wd = k ? plain : list;

		ONCE(&f->log, wd, NOTIFYX_CREATE, "b/new-b", NOTIFYX_EVENT_ISDIR, 0);
		ONCE(&f->log, wd, NOTIFYX_CREATE, "x/a/new-a", NOTIFYX_EVENT_ISDIR, 0);
		ONCE(&f->log, wd, NOTIFYX_CREATE, "b/in2/new-deep", NOTIFYX_EVENT_ISDIR, 0);
	}
	if (!alone)
		mirror_equals(&f->log, list, w, NULL, "after creations in the exchanged directories");
	no_error(&f->log);
}
static void exchange_two_dirs(struct tu_fix *f, const char *base)
{
	exchange_dirs(f, base, 0);
}
ON_BOTH(exchange_two_dirs)

/* The same with the plain recursive watch alone on its handle. */
static void exchange_two_dirs_alone(struct tu_fix *f, const char *base)
{
	exchange_dirs(f, base, 1);
}
ON_BOTH(exchange_two_dirs_alone)

/* Exchanges in a burst, read only at the end (fanotify merges unread events
 * of one object): new directories exchanged with each other, a file with a
 * directory in two other directories, a directory with an older one.  A
 * plain recursive watch alone on its handle, on an empty tree (so that its
 * events alone make a mirror): the mirror equals the tree. */
static void exchange_burst(struct tu_fix *f, const char *base)
{
	char *w = join(base, "w"); /* tu_path's buffers rotate */
	int wd, i;

	tu_mkdir(w);
	wd = tu_add(&f->log, w, APPEAR | GO, NOTIFYX_WATCH_RECURSIVE);
	for (i = 0; i < 20; i++) {
		char a[64], b[64];

		snprintf(a, sizeof a, "a%d", i);
		snprintf(b, sizeof b, "b%d", i);
		make_entry(tu_path(w, a), 1, "in");
		make_entry(tu_path(w, b), 1, "g");
		rename_exchange(tu_path(w, a), tu_path(w, b));
		rename_exchange(tu_path(w, tu_fmt("%s/g", a)), tu_path(w, tu_fmt("%s/in2", b)));
		if (i)
			rename_exchange(tu_path(w, a), tu_path(w, tu_fmt("b%d/in2", i - 1)));
	}
	tu_touch(tu_path(w, "last"));
	WAIT(&f->log, wd, NOTIFYX_CREATE, "last");
	tu_settle(&f->log);
	mirror_equals(&f->log, wd, w, NULL, "after a burst of exchanges");
	no_error(&f->log);
	free(w);
}
ON_BOTH(exchange_burst)

/* Directories made, then exchanged, or renamed and made again, all before
 * the library reads the first event.  The kernel's records describe the
 * past: the directory at a name when the library reads its CREATE is the one
 * the records after it leave there, not the one that was made.  Each name
 * must get what is there now, and the events inside each afterwards must
 * come under its own name (inotify watched "a" by its name at its CREATE,
 * then the exchange gave that kernel watch the name "b"). */
static void exchange_unread(struct tu_fix *f, const char *base)
{
	static const char *const made[] = { "a/new", "b/new", "c/new", "d/new", "a/g2/new", "b/in2/new" };
	char *w = join(base, "w"); /* tu_path's buffers rotate */
	int wd;
	size_t k, from;

	if (notifyx_backend(f->nx) == NOTIFYX_BACKEND_FANOTIFY && geteuid() != 0) {
		/* notifyx(7) BUGS: with inode marks, a directory made, filled
		 * and renamed before its events are read, its name made again,
		 * arrives as a MOVED_IN whose contents are not reported. */
		print_message("[ SKIP     ] fanotify with inode marks: a known bug (notifyx(7) BUGS)\n");
		free(w);
		skip();
	}
	tu_mkdir(w);
	wd = tu_add(&f->log, w, APPEAR | GO, NOTIFYX_WATCH_RECURSIVE);
	make_entry(tu_path(w, "a"), 1, "in");
	make_entry(tu_path(w, "b"), 1, "g");
	rename_exchange(tu_path(w, "a"), tu_path(w, "b"));
	tu_mkdir(tu_path(w, "c"));
	tu_touch(tu_path(w, "c/old"));
	tu_rename(tu_path(w, "c"), tu_path(w, "d"));
	tu_mkdir(tu_path(w, "c"));
	tu_touch(tu_path(w, "last"));
	WAIT(&f->log, wd, NOTIFYX_CREATE, "last");
	tu_settle(&f->log);
	mirror_equals(&f->log, wd, w, NULL, "after directories made and exchanged unread");
	from = f->log.n;
	for (k = 0; k < sizeof made / sizeof made[0]; k++)
		tu_touch(tu_path(w, made[k]));
	for (k = 0; k < sizeof made / sizeof made[0]; k++)
		WAIT_FROM(&f->log, from, wd, NOTIFYX_CREATE, made[k]);
	tu_settle(&f->log);
	/* Reported by the kernel, under the name where each was made. */
	for (k = 0; k < sizeof made / sizeof made[0] && !tu_is_scanning(f->nx); k++)
		ONCE(&f->log, wd, NOTIFYX_CREATE, made[k], NOTIFYX_EVENT_SYNTHETIC, 0);
	mirror_equals(&f->log, wd, w, NULL, "after entries made in them");
	no_error(&f->log);
	free(w);
}
ON_BOTH(exchange_unread)

/* Two files exchanged inside one watch: on fanotify (FID records name the
 * object that moved) and on the scanning backends (they see two inodes
 * swap) one RENAME with EXCHANGE; on inotify two RENAMEs without the flag
 * (indistinguishable from a rename onto an existing name and one back). */
static void exchange_two_files(struct tu_fix *f, const char *base)
{
	const char *w = tu_path(base, "w");
	int list, plain, k;
	size_t from;

	tu_mkdir(w);
	tu_mkdir(tu_path(w, "d"));
	tu_write(tu_path(w, "d/a"), "a");
	tu_write(tu_path(w, "b"), "bb");
	list = tu_add(&f->log, w, APPEAR | GO, NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_LIST);
	plain = tu_add(&f->log, w, APPEAR | GO, NOTIFYX_WATCH_RECURSIVE);
	listed(&f->log, list);
	tu_settle(&f->log);
	from = f->log.n;
	rename_exchange(tu_path(w, "d/a"), tu_path(w, "b"));
	WAIT_FROM(&f->log, from, plain, NOTIFYX_RENAME, NULL);
	tu_settle(&f->log);
	for (k = 0; k < 2; k++) {
		int wd = k ? plain : list;
		size_t i, n = 0;

		if (notifyx_backend(f->nx) == NOTIFYX_BACKEND_INOTIFY) {
			ONCE(&f->log, wd, NOTIFYX_RENAME, "b", NOTIFYX_EVENT_EXCHANGE | NOTIFYX_EVENT_ISDIR,
			     0);
			ONCE(&f->log, wd, NOTIFYX_RENAME, "d/a",
			     NOTIFYX_EVENT_EXCHANGE | NOTIFYX_EVENT_ISDIR, 0);
			n = 2;
		} else {
			i = ONCE(&f->log, wd, NOTIFYX_RENAME, NULL,
				 NOTIFYX_EVENT_EXCHANGE | NOTIFYX_EVENT_ISDIR, NOTIFYX_EVENT_EXCHANGE);
			if (strcmp(f->log.ev[i].path, "b") && strcmp(f->log.ev[i].path, "d/a")) {
				dump(&f->log, "actual");
				fail_msg("exchange of d/a and b reported on \"%s\"", f->log.ev[i].path);
			}
			n = 1;
		}
		for (i = from; i < f->log.n; i++)
			if (f->log.ev[i].wd == wd && f->log.ev[i].mask != NOTIFYX_RENAME) {
				dump(&f->log, "actual");
				fail_msg("wd %d: event #%zu besides the exchange's RENAME(s)", wd, i);
			}
		COUNT(&f->log, wd, n + 3 * (wd == list), "the listing and the exchange's RENAME(s)");
	}
	for (k = 0; k < 2; k++) {
		size_t i = (size_t)tu_find(&f->log, from, k ? plain : list, NOTIFYX_RENAME, NULL);

		TU_STREQ("old_path of the RENAME", !strcmp(f->log.ev[i].path, "b") ? "d/a" : "b",
			 f->log.ev[i].old_path);
	}
	/* API.md: the one case where inotify's mirror is not exact. */
	if (notifyx_backend(f->nx) != NOTIFYX_BACKEND_INOTIFY)
		mirror_equals(&f->log, list, w, NULL, "after the exchange");
}
ON_BOTH(exchange_two_files)

/* ---- watches stay independent -------------------------------------------------- */

/* A recursive watch and a recursive LIST watch of the same tree on one
 * handle (either added first), and a third one below them added and removed:
 * each gets each event of the subdirectories once. */
static void independent(struct tu_fix *f, const char *base, int list_first)
{
	static const char *const made[] = { "a/b/f", "a/c", "a/c/g", "top", "a/b/h" };
	const char *t = tu_path(base, "t");
	int plain = 0, list = 0, sub, k;
	size_t i;

	tu_mkdir(t);
	tu_mkdir(tu_path(t, "a"));
	tu_mkdir(tu_path(t, "a/b"));
	tu_touch(tu_path(t, "a/b/old"));
	if (!list_first)
		plain = tu_add(&f->log, t, NOTIFYX_CREATE | NOTIFYX_DELETE, NOTIFYX_WATCH_RECURSIVE);
	list = tu_add(&f->log, t, NOTIFYX_CREATE | NOTIFYX_DELETE,
		      NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_LIST);
	if (list_first)
		plain = tu_add(&f->log, t, NOTIFYX_CREATE | NOTIFYX_DELETE, NOTIFYX_WATCH_RECURSIVE);
	listed(&f->log, list);
	sub = tu_add(&f->log, tu_path(t, "a"), NOTIFYX_CREATE,
		     NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_LIST);
	listed(&f->log, sub);
	tu_touch(tu_path(t, "a/b/f"));
	tu_mkdir(tu_path(t, "a/c"));
	tu_touch(tu_path(t, "a/c/g"));
	tu_touch(tu_path(t, "top"));
	WAIT(&f->log, plain, NOTIFYX_CREATE, "top");
	WAIT(&f->log, sub, NOTIFYX_CREATE, "c/g");
	assert_int_equal(notifyx_rm_watch(f->nx, sub), 0);
	tu_touch(tu_path(t, "a/b/h"));
	tu_unlink(tu_path(t, "a/b/old"));
	WAIT(&f->log, plain, NOTIFYX_DELETE, "a/b/old");
	WAIT(&f->log, list, NOTIFYX_DELETE, "a/b/old");
	tu_settle(&f->log);
	for (k = 0; k < 2; k++) {
		int wd = k ? list : plain;

		for (i = 0; i < sizeof made / sizeof made[0]; i++)
			ONCE(&f->log, wd, NOTIFYX_CREATE, made[i], 0, 0);
		ONCE(&f->log, wd, NOTIFYX_DELETE, "a/b/old", 0, 0);
	}
	/* The listing (a, a/b, a/b/old) went to the LIST watch only. */
	COUNT(&f->log, plain, 6, "five CREATEs and a DELETE");
	COUNT(&f->log, list, 9, "three listed, five CREATEs and a DELETE");
	no_error(&f->log);
}

static void independent_list_second(struct tu_fix *f, const char *base)
{
	independent(f, base, 0);
}
ON_BOTH(independent_list_second)

static void independent_list_first(struct tu_fix *f, const char *base)
{
	independent(f, base, 1);
}
ON_BOTH(independent_list_first)

/* ---- LIST: each entry once while the tree changes ----------------------------- */

struct grower {
	const char *top;
	int ndirs, moves;
	int next;           /* the next round number: names are never reused */
	int gen[8];         /* moves: the generation of m<k> (even: in d<k>, odd: in d<k+1>) */
	volatile int stop;
};

/* Creates files in the existing directories, and new directories with a
 * directory and files in them, as fast as it can until told to stop (at
 * most 300 rounds), while the main thread adds the LIST watch and reads.
 * With moves, it renames directories full of files between two top
 * directories instead (m<k>.<gen>, a name never used before each time). */
static void *grow(void *arg)
{
	struct grower *g = arg;
	char p[PATH_MAX], q[PATH_MAX];
	int i, j, end = g->next + (g->moves ? 600 : 300);

	for (i = g->next; i < end && !g->stop; i++) {
		int d = (i * 7) % g->ndirs, k = i % g->ndirs, gen = g->gen[k];

		if (g->moves) {
			snprintf(p, sizeof p, "%s/d%d/m%d.%d", g->top, (k + gen % 2) % g->ndirs, k, gen);
			snprintf(q, sizeof q, "%s/d%d/m%d.%d", g->top, (k + 1 - gen % 2) % g->ndirs, k,
				 gen + 1);
			if (rename(p, q) == 0)
				g->gen[k]++;
			/* In bursts: the reader reads dry between them, where a
			 * directory it could not reach during the burst is looked
			 * at again. */
			if (i % 16 == 15)
				usleep(3000);
			continue;
		}
		snprintf(p, sizeof p, "%s/d%d/new%d", g->top, d, i);
		close(open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
		snprintf(p, sizeof p, "%s/d%d/n%d", g->top, d, i);
		if (mkdir(p, 0755) < 0)
			continue;
		for (j = 0; j < 3; j++) {
			snprintf(p, sizeof p, "%s/d%d/n%d/f%d", g->top, d, i, j);
			close(open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
		}
		snprintf(p, sizeof p, "%s/d%d/n%d/sub", g->top, d, i);
		if (mkdir(p, 0755) == 0) {
			snprintf(p, sizeof p, "%s/d%d/n%d/sub/g", g->top, d, i);
			close(open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
		}
	}
	g->next = i;
	return NULL;
}

/* Apply wd's events to a mirror: a CREATE of a path the mirror already holds
 * (no name is ever reused in these trees) is an entry reported twice. */
static void no_second_report(const struct tu_log *log, int wd, const char *top, int round)
{
	struct mirror m = { 0 };
	size_t i;

	for (i = 0; i < log->n; i++) {
		const struct tu_ev *e = &log->ev[i];

		if (e->wd != wd)
			continue;
		if (e->mask == NOTIFYX_CREATE && m_find(&m, e->path)) {
			dump(log, "actual");
			fail_msg("round %d: event #%zu: CREATE \"%s\", an entry already reported", round,
				 i, e->path);
		}
		m_apply(&m, e);
	}
	m_free(&m);
	mirror_equals(log, wd, top, NULL, tu_fmt("round %d", round));
}

/* A tree of 4 directories with 500 or 1500 files each (their listings take a
 * while); while a LIST watch is added and read, a thread adds files and new
 * directories with entries (or, with moves, renames directories full of
 * files between them): every entry is reported once, nothing twice, and the
 * mirror equals the tree.  Several rounds on the same tree, each with a new
 * watch. */
static void list_once(struct tu_fix *f, const char *base, int moves)
{
	const int ndirs = 4, nfiles = moves ? 1500 : 500, rounds = 3;
	char *top = join(base, "t"); /* tu_path's buffers rotate */
	struct grower g = { top, ndirs, moves, 0, { 0 }, 0 };
	int r, i, j;
	size_t total = 0;

	tu_mkdir(top);
	for (i = 0; i < ndirs; i++) {
		tu_mkdir(tu_path(top, tu_fmt("d%d", i)));
		for (j = 0; j < nfiles; j++)
			tu_touch(tu_path(top, tu_fmt("d%d/f%d", i, j)));
		if (!moves)
			continue;
		tu_mkdir(tu_path(top, tu_fmt("d%d/m%d.0", i, i)));
		for (j = 0; j < 20; j++)
			tu_touch(tu_path(top, tu_fmt("d%d/m%d.0/g%d", i, i, j)));
	}
	for (r = 0; r < rounds; r++) {
		pthread_t th;
		int wd;
		size_t from = f->log.n;
		long t0;

		g.stop = 0;
		assert_int_equal(pthread_create(&th, NULL, grow, &g), 0);
		wd = tu_add(&f->log, top, APPEAR | GO, NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_LIST);
		for (t0 = tu_now_ms(); tu_now_ms() - t0 < 200;) {
			struct pollfd pfd = { notifyx_fd(f->nx), POLLIN, 0 };

			/* With moves, read flat out: the reader catching up with the
			 * renames is what makes the race. */
			tu_pull(&f->log);
			if (!moves)
				poll(&pfd, 1, 10);
		}
		g.stop = 1;
		pthread_join(th, NULL);
		listed(&f->log, wd);
		tu_settle(&f->log);
		no_second_report(&f->log, wd, top, r);
		total += tu_count(&f->log, wd, NOTIFYX_CREATE, NULL);
		assert_int_equal(notifyx_rm_watch(f->nx, wd), 0);
		WAIT_FROM(&f->log, from, wd, NOTIFYX_IGNORED, "");
		tu_log_clear(&f->log);
	}
	free(top);
	no_error(&f->log);
	print_message("  %d rounds, %zu CREATEs\n", rounds, total);
}

static void list_once_while_growing(struct tu_fix *f, const char *base)
{
	list_once(f, base, 0);
}
static void list_once_while_growing_tmpdir(void **state)
{
	list_once_while_growing(F(state), F(state)->dir);
}

static void list_once_while_moving(struct tu_fix *f, const char *base)
{
	list_once(f, base, 1);
}
ON_BOTH(list_once_while_moving)

/* ---- the list ----------------------------------------------------------------- */

int conf_edges_run(void)
{
	const struct CMUnitTest tests[] = {
		TEST_BOTH(deep_chain),
		TEST_BOTH(deep_too_long),
		TEST_BOTH(rm_rf_one),
		TEST_BOTH(rm_rf_overlap),
		TEST_BOTH(rm_rf_overlap_later),
		TEST_BOTH(moved_root),
		TEST_BOTH(moved_root_self),
		cmocka_unit_test_setup_teardown(unmount_lazy_busy, tu_setup, edge_teardown),
		TEST_BOTH(self_isdir),
		TEST_BOTH(self_file_moved),
		TEST_BOTH(exchange_excluded_files),
		TEST_BOTH(exchange_excluded_dirs),
		TEST_BOTH(exchange_excluded_file_dir),
		TEST_BOTH(exchange_outside_dirs),
		TEST_BOTH(exchange_outside_dir_file),
		TEST_BOTH(exchange_two_dirs),
		TEST_BOTH(exchange_two_dirs_alone),
		TEST_BOTH(exchange_burst),
		TEST_BOTH(exchange_unread),
		TEST_BOTH(exchange_two_files),
		TEST_BOTH(independent_list_second),
		TEST_BOTH(independent_list_first),
		/* on /tmp only: nothing of it depends on the filesystem, and it is slow */
		cmocka_unit_test_setup_teardown(list_once_while_growing_tmpdir, tu_setup, edge_teardown),
		TEST_BOTH(list_once_while_moving),
	};

	return cmocka_run_group_tests_name("conformance: edges", tests, NULL, NULL);
}
