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
 * recursive (its table names the root's child directories).
 *
 * Then end to end, through the core: a RESCAN|LIST watch with queue_max 8
 * under a churn of mkdir, rename, moves in and out and rm -r, read slowly,
 * with kernel overflows made as above:
 * every OVERFLOW is followed by SYNTHETIC differences and a SYNC, and a copy
 * that applies every event as API.md's "Mirroring a tree" says equals the
 * disk at the end.  Exit 77 when fanotify is not available here.
 */
#include "config.h"

#include <dirent.h>
#include <ftw.h>
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
	assert_int_equal(f->nx->ops->process(f->nx, NX_PROCESS_FLUSH), 0);
	/* It lists the tree (for the core's model): dropped here. */
	w->staging = true;
	w->flags |= NOTIFYX_WATCH_LIST;
	assert_int_equal(f->nx->ops->repair(f->nx, w), 1);
	w->flags &= ~NOTIFYX_WATCH_LIST;
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
	unit_sh("mkdir -p %s/p/root/a/a1/a2 %s/p/root/b/b1 %s/p/root/c/c1", f->base, f->base, f->base);
	snprintf(f->root, sizeof(f->root), "%s/p/root", f->base);
	setenv("NOTIFYX_FANOTIFY_INODE_MAX", inode_max, 1);
	f->nx = notifyx_open(&cfg);
	unsetenv("NOTIFYX_FANOTIFY_INODE_MAX");
	assert_non_null(f->nx);
	f->wd = notifyx_add_watch(f->nx, f->root,
				  NOTIFYX_CREATE | NOTIFYX_DELETE | NOTIFYX_RENAME |
					  NOTIFYX_MOVED_IN | NOTIFYX_MOVED_OUT | NOTIFYX_ATTRIB |
					  NOTIFYX_DELETE_SELF,
				  flags);
	assert_true(f->wd > 0);
	return 0;
}

static void close_fix(struct fix *f)
{
	assert_int_equal(notifyx_close(f->nx), 0);
	unit_sh("rm -rf %s", f->base);
	forget(f);
}

/* The changes made while events are lost or pending. */
static void churn(struct fix *f)
{
	unit_sh("mv %s/p/root/a %s/p/root/a_new", f->base, f->base);
	unit_sh("rm -r %s/p/root/c", f->base);
	unit_sh("mkdir -p %s/p/root/n/n1/n2 && touch %s/p/root/n/n1/file", f->base, f->base);
	unit_sh("mv %s/p %s/q", f->base, f->base);
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
	unit_sh("touch %s/a_new/a1/a2/f1 %s/n/n1/n2/f2 %s/b/b1/f3", f->root, f->root, f->root);
	unit_sh("mkdir %s/a_new/a1/x %s/n/y && touch %s/a_new/a1/x/f4 %s/n/y/f5", f->root,
	     f->root, f->root, f->root);
	unit_sh("chmod 700 %s/n/n1 %s/a_new/a1", f->root, f->root);
	unit_sh("mv %s/n/n1/n2 %s/n/n1/n3 && touch %s/n/n1/n3/f6", f->root, f->root, f->root);
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
	unit_sh("mv %s/a %s/a_new && mkdir %s/m", f.root, f.root, f.root);
	lose_events();
	repair(&f);
	table_has(&f, "a_new", true);
	table_has(&f, "m", true);
	table_has(&f, "a", false);
	unit_sh("chmod 700 %s/a_new %s/m && touch %s/f", f.root, f.root, f.root);
	collect(&f);
	expect(&f, NOTIFYX_ATTRIB, "a_new");
	expect(&f, NOTIFYX_ATTRIB, "m");
	expect(&f, NOTIFYX_CREATE, "f");
	expect_none_below(&f, "a");
	close_fix(&f);
}

/* The root deleted while its events are lost: the watch ends as it would
 * have, with DELETE_SELF and IGNORED. */
static void test_root_gone(void **state)
{
	struct fix f;
	struct nx_watch *w;
	const struct notifyx_event *e;

	(void)state;
	open_fix(&f, "1000000", NOTIFYX_WATCH_RECURSIVE);
	unit_sh("rm -r %s", f.root);
	lose_events();
	w = nx_map_get(&f.nx->watches, (uint64_t)f.wd);
	w->staging = true;
	assert_int_equal(f.nx->ops->repair(f.nx, w), 0);
	w->staging = false;
	assert_true(w->ended);
	assert_non_null(e = nx_queue_peek(&f.nx->stage));
	assert_int_equal(e->mask, NOTIFYX_DELETE_SELF);
	nx_queue_pop(&f.nx->stage);
	assert_non_null(e = nx_queue_peek(&f.nx->stage));
	assert_int_equal(e->mask, NOTIFYX_IGNORED);
	nx_queue_clear(&f.nx->stage);
	close_fix(&f);
}

/* ---- end to end ---- */

struct entry {
	char *path;
	bool dir;
};

struct copy {
	struct entry *e;
	size_t n;
};

static bool below(const char *path, const char *top)
{
	size_t len = strlen(top);

	/* "" is the root: everything is below it. */
	return !len || (!strncmp(path, top, len) && (!path[len] || path[len] == '/'));
}

static ssize_t copy_find(const struct copy *c, const char *path)
{
	for (size_t i = 0; i < c->n; i++)
		if (!strcmp(c->e[i].path, path))
			return (ssize_t)i;
	return -1;
}

static void copy_add(struct copy *c, const char *path, bool dir)
{
	c->e = realloc(c->e, (c->n + 1) * sizeof(*c->e));
	assert_non_null(c->e);
	c->e[c->n].path = strdup(path);
	c->e[c->n++].dir = dir;
}

static void copy_drop(struct copy *c, const char *top)
{
	size_t j = 0;

	for (size_t i = 0; i < c->n; i++) {
		if (below(c->e[i].path, top))
			free(c->e[i].path);
		else
			c->e[j++] = c->e[i];
	}
	c->n = j;
}

/* Entries below from (or to, with swap) get the other prefix. */
static void copy_move(struct copy *c, const char *from, const char *to, bool swap)
{
	for (size_t i = 0; i < c->n; i++) {
		const char *a = NULL, *b = NULL;
		if (below(c->e[i].path, from))
			a = from, b = to;
		else if (swap && below(c->e[i].path, to))
			a = to, b = from;
		if (!a)
			continue;
		char *p = malloc(strlen(b) + strlen(c->e[i].path) - strlen(a) + 1);
		assert_non_null(p);
		sprintf(p, "%s%s", b, c->e[i].path + strlen(a));
		free(c->e[i].path);
		c->e[i].path = p;
	}
}

/* API.md, "Mirroring a tree". */
static void copy_apply(struct copy *c, const struct notifyx_event *ev)
{
	const char *path = notifyx_event_path(ev), *old = notifyx_event_old_path(ev);
	bool dir = ev->flags & NOTIFYX_EVENT_ISDIR;
	ssize_t i;

	switch (ev->mask) {
	case NOTIFYX_RENAME:
		if (ev->flags & NOTIFYX_EVENT_EXCHANGE) {
			copy_move(c, old, path, true);
			break;
		}
		if (copy_find(c, old) >= 0) {
			copy_drop(c, path);
			copy_move(c, old, path, false);
			break;
		}
		/* as for CREATE */
		__attribute__((fallthrough));
	case NOTIFYX_CREATE:
	case NOTIFYX_MOVED_IN:
		if ((i = copy_find(c, path)) >= 0 && c->e[i].dir == dir)
			break;
		copy_drop(c, path);
		copy_add(c, path, dir);
		break;
	case NOTIFYX_DELETE:
	case NOTIFYX_MOVED_OUT:
		copy_drop(c, path);
		break;
	case NOTIFYX_DELETE_SELF:
		copy_drop(c, "");
		break;
	default:
		break;
	}
}

static struct copy *disk_listing;
static size_t disk_root_len;

static int list_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)type;
	if (ftw->level > 0)
		copy_add(disk_listing, path + disk_root_len + 1, S_ISDIR(st->st_mode));
	return 0;
}

static int rm_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st, (void)type, (void)ftw;
	remove(path);
	return 0;
}

static int by_path(const void *a, const void *b)
{
	return strcmp(((const struct entry *)a)->path, ((const struct entry *)b)->path);
}

/* The copy equals the tree at root; both are emptied. */
static void same_as_disk(struct copy *c, const char *root)
{
	struct copy d = { 0 };
	bool same;

	disk_listing = &d;
	disk_root_len = strlen(root);
	assert_int_equal(nftw(root, list_one, 16, FTW_PHYS), 0);
	qsort(c->e, c->n, sizeof(*c->e), by_path);
	qsort(d.e, d.n, sizeof(*d.e), by_path);
	same = c->n == d.n;
	for (size_t i = 0; same && i < c->n; i++)
		same = !strcmp(c->e[i].path, d.e[i].path) && c->e[i].dir == d.e[i].dir;
	if (!same) {
		fprintf(stderr, "copy (%zu):\n", c->n);
		for (size_t i = 0; i < c->n; i++)
			fprintf(stderr, "  %s%s\n", c->e[i].path, c->e[i].dir ? "/" : "");
		fprintf(stderr, "disk (%zu):\n", d.n);
		for (size_t i = 0; i < d.n; i++)
			fprintf(stderr, "  %s%s\n", d.e[i].path, d.e[i].dir ? "/" : "");
	}
	copy_drop(c, "");
	copy_drop(&d, "");
	free(c->e);
	free(d.e);
	assert_true(same);
}

/* A random path of the tree at root: one to three of a, b, c. */
static void random_path(char *buf, size_t size, const char *root)
{
	int depth = 1 + rand() % 3;
	size_t len = (size_t)snprintf(buf, size, "%s", root);

	for (int i = 0; i < depth; i++)
		len += (size_t)snprintf(buf + len, size - len, "/%c", "abc"[rand() % 3]);
}

static void churn_op(const char *root, const char *out)
{
	char p[PATH_MAX], q[PATH_MAX];
	int fd;

	random_path(p, sizeof(p), root);
	random_path(q, sizeof(q), root);
	switch (rand() % 8) {
	case 0:
	case 1:
		mkdir(p, 0755);
		break;
	case 2:
		strcat(p, "/f");
		if ((fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644)) >= 0)
			close(fd);
		break;
	case 3:
	case 4:
		rename(p, q); /* fails often (missing, into itself): a no-op */
		break;
	case 5:
		nftw(p, rm_one, 16, FTW_DEPTH | FTW_PHYS);
		break;
	case 6:
		rename(p, out); /* moved out (when out is free) */
		break;
	case 7:
		rename(out, p); /* and back in elsewhere */
		break;
	}
}

static void test_end_to_end(void **state)
{
	const char *inode_max = *state, *seed = getenv("FREPAIR_SEED");
	struct notifyx_config cfg = { .size = sizeof(cfg), .backend = NOTIFYX_BACKEND_FANOTIFY,
				      .flags = NOTIFYX_NONBLOCK, .queue_max = 8 };
	char base[64] = "/tmp/nx-frepair.XXXXXX", root[128], out[128];
	static char buf[65536];
	struct copy c = { 0 };
	struct notifyx *nx;
	size_t overflows = 0, synthetic = 0, syncs = 0;
	bool due = false; /* an OVERFLOW waits for its SYNC */
	int wd;

	assert_non_null(mkdtemp(base));
	snprintf(root, sizeof(root), "%s/root", base);
	snprintf(out, sizeof(out), "%s/out", base);
	assert_int_equal(mkdir(root, 0755), 0);
	setenv("NOTIFYX_FANOTIFY_INODE_MAX", inode_max, 1);
	nx = notifyx_open(&cfg);
	unsetenv("NOTIFYX_FANOTIFY_INODE_MAX");
	assert_non_null(nx);
	wd = notifyx_add_watch(nx, root,
			       NOTIFYX_CREATE | NOTIFYX_DELETE | NOTIFYX_RENAME | NOTIFYX_MOVED_OUT |
				       NOTIFYX_MOVED_IN | NOTIFYX_DELETE_SELF,
			       NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_LIST | NOTIFYX_WATCH_RESCAN);
	assert_true(wd > 0);
	/* The same churn each run, unless FREPAIR_SEED says another. */
	srand(seed ? (unsigned)atoi(seed) : 1);
	for (int round = 0; round < 60; round++) {
		struct pollfd p = { .fd = notifyx_fd(nx), .events = POLLIN };
		bool last = round == 59;
		/* A burst unread, then a little read: the library's queue
		 * overflows; at the end, read until quiet. */
		for (int i = 0; i < 40 && !last; i++)
			churn_op(root, out);
		/* Every fourth burst, a kernel overflow too: the events are
		 * gone and the backend says so, as for FAN_Q_OVERFLOW (the
		 * library's own losses leave its table current). */
		if (round % 4 == 3 && !last) {
			lose_events();
			nx_lost_all(nx);
		}
		for (int reads = 0; last || reads < 3; reads++) {
			ssize_t len = notifyx_read(nx, buf, last ? sizeof(buf) : NOTIFYX_EVENT_MAX);
			if (len < 0) {
				assert_int_equal(errno, EAGAIN);
				if (!last || poll(&p, 1, 500) <= 0)
					break;
				continue;
			}
			for (const struct notifyx_event *e = (const void *)buf;
			     (const char *)e < buf + len; e = notifyx_event_next(e)) {
				assert_int_equal(e->wd, wd);
				assert_int_not_equal(e->mask, NOTIFYX_IGNORED);
				assert_int_not_equal(e->mask, NOTIFYX_ERROR);
				if (e->mask == NOTIFYX_OVERFLOW) {
					overflows++;
					due = true;
				} else if (e->mask == NOTIFYX_SYNC) {
					syncs++;
					due = false;
				} else if (due && (e->flags & NOTIFYX_EVENT_SYNTHETIC)) {
					synthetic++;
				}
				copy_apply(&c, e);
			}
		}
	}
	fprintf(stderr, "%zu overflows, %zu syncs, %zu synthetic differences\n", overflows, syncs,
		synthetic);
	assert_false(due);
	assert_true(overflows > 0);
	assert_true(synthetic > 0);
	assert_true(syncs > overflows / 2); /* one SYNC per repair, the listing's included */
	same_as_disk(&c, root);
	assert_int_equal(notifyx_close(nx), 0);
	nftw(base, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/*
 * The kernel merges a deletion into the unread record of the same object
 * at the same name, where that record was queued: a file made before a
 * repair, whose creation is still unread when the repair's listing sees
 * it, then deleted, has its deletion in a record older than the repair.
 * The watch must still hear of it.  (Many files made before it keep its
 * record unread through the reads that end in the repair's SYNC.)
 */
static void test_merged_delete(void **state)
{
	const char *inode_max = *state;
	struct notifyx_config cfg = { .size = sizeof(cfg), .backend = NOTIFYX_BACKEND_FANOTIFY,
				      .flags = NOTIFYX_NONBLOCK, .queue_max = 8 };
	static char buf[4 << 20];
	struct pollfd p;
	struct fix f = { .base = "/tmp/nx-frepair.XXXXXX" };
	bool overflow = false, synced = false, deleted = false;
	char path[200];

	assert_non_null(mkdtemp(f.base));
	snprintf(f.root, sizeof(f.root), "%s/root", f.base);
	assert_int_equal(mkdir(f.root, 0755), 0);
	setenv("NOTIFYX_FANOTIFY_INODE_MAX", inode_max, 1);
	f.nx = notifyx_open(&cfg);
	unsetenv("NOTIFYX_FANOTIFY_INODE_MAX");
	assert_non_null(f.nx);
	p = (struct pollfd){ .fd = notifyx_fd(f.nx), .events = POLLIN };
	f.wd = notifyx_add_watch(f.nx, f.root, NOTIFYX_CREATE | NOTIFYX_DELETE | NOTIFYX_RENAME |
					       NOTIFYX_MOVED_OUT | NOTIFYX_MOVED_IN,
				 NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_LIST | NOTIFYX_WATCH_RESCAN);
	assert_true(f.wd > 0);
	collect(&f); /* the listing: an empty root */
	for (int i = 0; i < 20000; i++) {
		snprintf(path, sizeof(path), "%s/m%d", f.root, i);
		assert_int_equal(close(open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644)), 0);
	}
	snprintf(path, sizeof(path), "%s/f", f.root);
	assert_int_equal(close(open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644)), 0);
	/* Read up to the repair's SYNC, which lists f. */
	while (!synced && poll(&p, 1, 2000) > 0) {
		ssize_t len = notifyx_read(f.nx, buf, sizeof(buf));
		if (len < 0) {
			assert_int_equal(errno, EAGAIN);
			continue;
		}
		for (const struct notifyx_event *e = (const void *)buf;
		     (const char *)e < buf + len; e = notifyx_event_next(e)) {
			overflow = overflow || e->mask == NOTIFYX_OVERFLOW;
			synced = synced || (overflow && e->mask == NOTIFYX_SYNC);
		}
	}
	assert_true(synced);
	assert_int_equal(unlink(path), 0);
	forget(&f);
	collect(&f);
	for (size_t i = 0; i < f.n; i++)
		deleted = deleted || (f.ev[i].mask == NOTIFYX_DELETE && !strcmp(f.ev[i].path, "f"));
	assert_true(deleted);
	forget(&f);
	assert_int_equal(notifyx_close(f.nx), 0);
	nftw(f.base, rm_one, 16, FTW_DEPTH | FTW_PHYS);
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
		cmocka_unit_test(test_root_gone),
		{ "end to end, inode marks", test_end_to_end, NULL, NULL, (void *)"1000000" },
		{ "end to end, filesystem mark", test_end_to_end, NULL, NULL, (void *)"0" },
		{ "a deletion merged, inode marks", test_merged_delete, NULL, NULL, (void *)"1000000" },
		{ "a deletion merged, filesystem mark", test_merged_delete, NULL, NULL, (void *)"0" },
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
