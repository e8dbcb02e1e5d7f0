/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests of the diff of backends/snapshot.c (a pure function over two
 * trees built in memory): each case checks the exact events, and that a
 * mirror applying them to the old tree ends equal to the new one.  Reading
 * real directories (nanosecond times, inode reuse, renames found by inode)
 * is tested on the kernel by tests/scan-identity.c, except nx_snap_relist,
 * whose refs (the backend's holds on directories) are checked here on a
 * real directory. */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "nx.h"
#include "snapmodel.h"

/* ---- building trees: "name=ino[,b=btime][,s=size][,m=mtime][,p=perm]" ----
 * separated by spaces, a trailing '/' on the name for a directory, parents
 * before their entries.  The birth time defaults to ino * 1000. */

static struct nx_snode *build(const char *spec)
{
	struct nx_sattr ra = { .ino = 1, .dev = 1, .mode = S_IFDIR | 0755, .has_id2 = true };
	struct nx_snode *root = nx_snap_add(NULL, "", 0, &ra);
	char *s = strdup(spec), *save = NULL;

	assert_non_null(root);
	root->entered = true;
	for (char *tok = strtok_r(s, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		struct nx_sattr a = { .dev = 1, .has_id2 = true };
		char *eq = strchr(tok, '='), *name, *slash, *opt;
		struct nx_snode *parent = root, *n;
		bool dir;

		assert_non_null(eq);
		*eq = '\0';
		a.ino = strtoull(eq + 1, &opt, 10);
		a.id2 = a.ino * 1000;
		a.size = 0;
		for (; *opt == ','; opt++) {
			char k = opt[1];
			unsigned long long v = strtoull(opt + 3, &opt, 10);
			if (k == 'b')
				a.id2 = v;
			else if (k == 's')
				a.size = v;
			else if (k == 'm')
				a.mtime = (int64_t)v;
			else if (k == 'p')
				a.mode = (uint32_t)v;
			opt--;
		}
		dir = tok[strlen(tok) - 1] == '/';
		if (dir)
			tok[strlen(tok) - 1] = '\0';
		a.mode = (dir ? S_IFDIR : S_IFREG) | (a.mode ? a.mode : 0644);
		for (name = tok; (slash = strchr(name, '/')); name = slash + 1) {
			parent = nx_snap_find(parent, name, (size_t)(slash - name));
			assert_non_null(parent);
		}
		n = nx_snap_add(parent, name, strlen(name), &a);
		assert_non_null(n);
		n->entered = dir;
	}
	free(s);
	return root;
}

/* ---- running the diff and recording its events ---- */

struct rec {
	char text[8192];
	struct sm_model *models;
};

static void record(void *ctx, size_t w, uint32_t mask, uint32_t flags, uint32_t cookie,
		   const char *path, size_t len, const char *old, size_t old_len)
{
	struct rec *r = ctx;
	char one[1024];

	assert_int_equal(strlen(path), len);
	assert_int_equal(old ? strlen(old) : 0, old_len);
	snprintf(one, sizeof(one), "%s%zu:%s%s %s%s%s%s%s", r->text[0] ? "|" : "", w,
		 notifyx_event_name(mask), flags & NOTIFYX_EVENT_ISDIR ? "/" : "", path,
		 old_len ? (flags & NOTIFYX_EVENT_EXCHANGE ? "<->" : "<-") : "", old_len ? old : "",
		 cookie ? " #" : "", cookie ? "c" : "");
	strncat(r->text, one, sizeof(r->text) - strlen(r->text) - 1);
	sm_apply(&r->models[w], mask, flags, path, old);
}

/* Diffs old[i] -> cur[i] for n watches; returns the events as text and
 * checks the mirror invariant, the mirror starting from told[i] (what the
 * application was told; NULL: old).  Frees the trees. */
static const char *diff_told(struct nx_snode **old, struct nx_snode **cur, const uint32_t *flags,
			     size_t n, struct nx_snode **told)
{
	static struct rec r;
	struct nx_sdiff_watch w[4];
	struct sm_model models[4], want;
	uint32_t cookie = 0;

	memset(&r, 0, sizeof(r));
	r.models = models;
	for (size_t i = 0; i < n; i++) {
		w[i] = (struct nx_sdiff_watch){ .old = old[i], .cur = cur[i], .flags = flags[i] };
		sm_from_tree(&models[i], told ? told[i] : old[i]);
	}
	assert_int_equal(nx_snap_diff(w, n, &cookie, record, &r), 0);
	for (size_t i = 0; i < n; i++) {
		const char *d;
		if (models[i].why[0])
			fail_msg("watch %zu: %s; events: %s", i, models[i].why, r.text);
		sm_from_tree(&want, cur[i]);
		/* Without LIST, what a directory moved in holds is implied. */
		if (!models[i].overflow && (flags[i] & NX_SDIFF_LIST) &&
		    (d = sm_diff(&models[i], &want)))
			fail_msg("watch %zu: %s; events: %s", i, d, r.text);
		sm_free(&want);
		sm_free(&models[i]);
		nx_snap_free(old[i]);
		nx_snap_free(cur[i]);
		if (told)
			nx_snap_free(told[i]);
	}
	return r.text;
}

static const char *diff_n(struct nx_snode **old, struct nx_snode **cur, const uint32_t *flags,
			  size_t n)
{
	return diff_told(old, cur, flags, n, NULL);
}

static const char *diff1(const char *from, const char *to)
{
	struct nx_snode *o = build(from), *c = build(to);
	uint32_t f = NX_SDIFF_RECURSIVE | NX_SDIFF_LIST;

	return diff_n(&o, &c, &f, 1);
}

#define DIFF(from, to, want) assert_string_equal(diff1((from), (to)), (want))

/* ---- cases ---- */

static void nothing(void **state)
{
	(void)state;
	DIFF("a=2 d/=3 d/f=4", "a=2 d/=3 d/f=4", "");
}

static void create_delete(void **state)
{
	(void)state;
	DIFF("a=2", "a=2 b=3", "0:create b");
	DIFF("a=2 b=3", "b=3", "0:delete a");
	/* Parents before their entries; entries before their directory. */
	DIFF("", "d/=2 d/e/=3 d/e/f=4", "0:create/ d|0:create/ d/e|0:create d/e/f");
	DIFF("d/=2 d/e/=3 d/e/f=4", "", "0:delete d/e/f|0:delete/ d/e|0:delete/ d");
}

static void rename_by_inode(void **state)
{
	(void)state;
	DIFF("a=2", "b=2", "0:rename b<-a");
	DIFF("a=2 d/=3", "d/=3 d/a=2", "0:rename d/a<-a");
	/* A directory carries its entries: one event. */
	DIFF("d/=2 d/f=3 d/e/=4 d/e/g=5", "x/=2 x/f=3 x/e/=4 x/e/g=5", "0:rename/ x<-d");
	/* ... and a change inside it is reported under its new name. */
	DIFF("d/=2 d/f=3", "x/=2 x/g=3", "0:rename/ x<-d|0:rename x/g<-x/f");
}

static void inode_reuse_is_not_rename(void **state)
{
	(void)state;
	/* Same inode number, another birth time: a new file. */
	DIFF("a=2", "b=2,b=7", "0:delete a|0:create b");
	/* The same name with a new file of the reused number: the arrival only. */
	DIFF("a=2", "a=2,b=9", "0:create a");
}

static void modify_attrib(void **state)
{
	(void)state;
	DIFF("a=2,s=1", "a=2,s=5", "0:modify a");
	/* Within the same second: nanoseconds count. */
	DIFF("a=2,m=1000000001", "a=2,m=1000000002", "0:modify a");
	DIFF("a=2,p=420", "a=2,p=384", "0:attrib a");
	/* A directory's size and times follow its entries: not reported. */
	DIFF("d/=2,s=1,m=1", "d/=2,s=2,m=2", "");
	DIFF("d/=2", "d/=2,p=448", "0:attrib/ d");
}

static void replaced(void **state)
{
	(void)state;
	/* A rename onto an existing name: only the arrival. */
	DIFF("a=2 b=3", "b=2", "0:rename b<-a");
	/* A directory replaced by another: its entries go, then the arrival. */
	DIFF("d/=2 d/f=3", "d/=4 d/g=5", "0:delete d/f|0:create/ d|0:create d/g");
	/* A file replaced by a directory. */
	DIFF("d=2", "d/=4 d/g=5", "0:create/ d|0:create d/g");
}

static void exchange(void **state)
{
	(void)state;
	DIFF("a=2 b=3", "a=3 b=2", "0:rename a<->b");
	/* ISDIR describes the entry now at path. */
	DIFF("a/=2 b=3", "a=3 b/=2", "0:rename a<->b");
}

static void chains_and_cycles(void **state)
{
	(void)state;
	/* b -> c, then a -> b: the first move is reported first. */
	DIFF("a=2 b=3", "b=2 c=3", "0:rename c<-b|0:rename b<-a");
	/* A three-cycle: two exchanges. */
	DIFF("a=2 b=3 c=4", "a=4 b=2 c=3", "0:rename a<->c|0:rename b<->c");
}

static void into_new_directory(void **state)
{
	(void)state;
	/* mkdir n; mv f n/f: the directory first, then the move. */
	DIFF("f=2", "n/=3 n/f=2", "0:create/ n|0:rename n/f<-f");
}

static void between_watches(void **state)
{
	struct nx_snode *o[2] = { build("a=2 d/=5"), build("x=3") };
	struct nx_snode *c[2] = { build("d/=5"), build("x=3 y=2") };
	uint32_t f[2] = { NX_SDIFF_RECURSIVE | NX_SDIFF_LIST, NX_SDIFF_RECURSIVE | NX_SDIFF_LIST };

	(void)state;
	assert_string_equal(diff_n(o, c, f, 2), "0:moved_out a #c|1:moved_in y #c");
	/* A directory moved in is listed in a LIST watch. */
	o[0] = build("d/=5 d/f=6");
	o[1] = build("");
	c[0] = build("");
	c[1] = build("e/=5 e/f=6");
	assert_string_equal(diff_n(o, c, f, 2), "0:moved_out/ d #c|1:moved_in/ e #c|1:create e/f");
	/* ... and not in a recursive one without LIST (implied). */
	f[1] = NX_SDIFF_RECURSIVE;
	o[0] = build("d/=5 d/f=6");
	o[1] = build("");
	c[0] = build("");
	c[1] = build("e/=5 e/f=6");
	assert_string_equal(diff_n(o, c, f, 2), "0:moved_out/ d #c|1:moved_in/ e #c");
}

static void cookies_differ(void **state)
{
	struct nx_snode *o[2] = { build("a=2 b=3"), build("") };
	struct nx_snode *c[2] = { build(""), build("a=2 b=3") };
	uint32_t f[2] = { NX_SDIFF_RECURSIVE, NX_SDIFF_RECURSIVE };
	struct nx_sdiff_watch w[2] = { { o[0], c[0], f[0] }, { o[1], c[1], f[1] } };
	struct sm_model m[2];
	struct rec r = { .models = m };
	uint32_t cookie = 0xfffffffe;

	(void)state;
	sm_from_tree(&m[0], o[0]);
	sm_from_tree(&m[1], o[1]);
	assert_int_equal(nx_snap_diff(w, 2, &cookie, record, &r), 0);
	assert_string_equal(r.text, "0:moved_out a #c|1:moved_in a #c|0:moved_out b #c|1:moved_in b #c");
	/* The counter wrapped: 0xffffffff, then 1 (never 0). */
	assert_int_equal(cookie, 1);
	for (int i = 0; i < 2; i++) {
		sm_free(&m[i]);
		nx_snap_free(o[i]);
		nx_snap_free(c[i]);
	}
}

static void unread_directory_keeps_listing(void **state)
{
	struct nx_snode *o = build("d/=2 d/f=3"), *c = build("d/=2");
	uint32_t f = NX_SDIFF_RECURSIVE;
	struct nx_sdiff_watch w = { o, c, f };
	struct sm_model m;
	struct rec r = { .models = &m };
	uint32_t cookie = 0;

	(void)state;
	/* d could not be read this time: nothing is reported, and the new
	 * snapshot keeps what was known of it. */
	nx_snap_find(c, "d", 1)->entered = false;
	sm_from_tree(&m, o);
	assert_int_equal(nx_snap_diff(&w, 1, &cookie, record, &r), 0);
	assert_string_equal(r.text, "");
	assert_non_null(nx_snap_find(nx_snap_find(c, "d", 1), "f", 1));
	sm_free(&m);
	nx_snap_free(o);
	nx_snap_free(c);
}

static void remount_is_overflow(void **state)
{
	struct nx_snode *o = build("m/=2 m/f=3"), *c = build("m/=9");
	uint32_t f = NX_SDIFF_RECURSIVE;

	(void)state;
	/* m was another filesystem's root (another device than its parent). */
	nx_snap_find(o, "m", 1)->a.dev = 2;
	nx_snap_find(nx_snap_find(o, "m", 1), "f", 1)->a.dev = 2;
	assert_string_equal(diff_n(&o, &c, &f, 1), "0:overflow ");
}

/* ---- nx_snap_relist on a real directory, with refs ---- */

struct fake_ref {
	struct nx_sref ref;
	int *released;
};

static void fake_release(struct nx_sref *ref)
{
	struct fake_ref *f = (struct fake_ref *)ref;

	++*f->released;
	close(ref->fd);
	free(f);
}

static int released;

static int fake_on_dir(void *ctx, struct nx_snode *n, int fd, const char *path)
{
	struct fake_ref *f = calloc(1, sizeof(*f));

	(void)ctx;
	(void)path;
	assert_non_null(f);
	f->ref = (struct nx_sref){ .node = n, .fd = fd, .release = fake_release };
	f->released = &released;
	n->ref = &f->ref;
	(*(int *)ctx)++;
	return 1;
}

static int refs_ok(const struct nx_snode *n)
{
	int k = 0;

	if (nx_snode_isdir(n) && n->entered) {
		assert_non_null(n->ref);
		assert_ptr_equal(n->ref->node, n);
		k++;
	}
	for (uint32_t i = 0; i < n->nkids; i++)
		k += refs_ok(n->kids[i]);
	return k;
}

static void touch_at(const char *dir, const char *name)
{
	char p[4096];

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	close(open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
}

static void relist_marked_only(void **state)
{
	char dir[] = "/tmp/notifyx-unit-snapshot.XXXXXX", p[4096];
	struct nx_sread r = { .recursive = true, .on_dir = fake_on_dir };
	int opened = 0, fd;
	struct nx_snode *old, *cur;
	const char *ev;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(p, sizeof(p), "%s/a", dir);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/b", dir);
	assert_int_equal(mkdir(p, 0755), 0);
	touch_at(dir, "b/f");
	fd = open(dir, O_PATH | O_CLOEXEC);
	r.ctx = &opened;
	released = 0;
	assert_non_null(old = nx_snap_read(fd, &r));
	assert_int_equal(opened, 3);
	assert_int_equal(refs_ok(old), 3);
	/* Both change; only a is marked. */
	touch_at(dir, "a/new");
	touch_at(dir, "b/new");
	snprintf(p, sizeof(p), "%s/a/sub", dir);
	assert_int_equal(mkdir(p, 0755), 0);
	nx_snap_mark(nx_snap_find(old, "a", 1));
	r.prev = old;
	r.listings = 0;
	assert_non_null(cur = nx_snap_relist(fd, old, &r));
	assert_int_equal(r.listings, 2); /* a, and a/sub which is new */
	assert_int_equal(opened, 4);     /* a/sub registered; a reused */
	{
		struct nx_sdiff_watch w = { .old = old, .cur = cur, .flags = NX_SDIFF_RECURSIVE };
		static struct rec rc;
		struct sm_model m;
		uint32_t cookie = 0;

		memset(&rc, 0, sizeof(rc));
		rc.models = &m;
		sm_from_tree(&m, old);
		assert_int_equal(nx_snap_diff(&w, 1, &cookie, record, &rc), 0);
		sm_free(&m);
		ev = rc.text;
		assert_string_equal(ev, "0:create a/new|0:create/ a/sub");
	}
	nx_snap_free(old);
	assert_int_equal(released, 0); /* every ref went on to cur */
	assert_int_equal(refs_ok(cur), 4);
	assert_int_equal(nx_snap_find(nx_snap_find(cur, "b", 1), "f", 1) != NULL, 1);
	assert_null(nx_snap_find(nx_snap_find(cur, "b", 1), "new", 3)); /* b not listed */
	nx_snap_free(cur);
	assert_int_equal(released, 4);
	close(fd);
	snprintf(p, sizeof(p), "rm -rf %s", dir);
	assert_int_equal(system(p), 0);
}

/* ---- a repair's new tree taking the old one's unchanged files over ---- */

/* A read with a previous snapshot takes its unchanged files over: the same
 * nodes, gone from the previous snapshot, and the diff between the two
 * still turns a copy of the first into the second. */
static void read_takes_unchanged_files(void **state)
{
	char dir[] = "/tmp/notifyx-unit-snapshot.XXXXXX", p[4096];
	struct nx_sread r = { .recursive = true };
	struct nx_snode *old, *cur, *g, *b, *f, *x;
	struct sm_model m, want;
	int fd, wfd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(p, sizeof(p), "cd %s && mkdir a c && touch a/f a/g b c/x", dir);
	assert_int_equal(system(p), 0);
	fd = open(dir, O_PATH | O_CLOEXEC);
	assert_non_null(old = nx_snap_read(fd, &r));
	g = nx_snap_find(nx_snap_find(old, "a", 1), "g", 1);
	f = nx_snap_find(nx_snap_find(old, "a", 1), "f", 1);
	b = nx_snap_find(old, "b", 1);
	x = nx_snap_find(nx_snap_find(old, "c", 1), "x", 1);
	assert_true(g && f && b && x);
	sm_from_tree(&m, old);
	/* a/f grows; c is another directory now, with another x. */
	snprintf(p, sizeof(p), "%s/a/f", dir);
	assert_true((wfd = open(p, O_WRONLY | O_APPEND | O_CLOEXEC)) >= 0);
	assert_int_equal(write(wfd, "x", 1), 1);
	close(wfd);
	snprintf(p, sizeof(p), "rm -r %s/c && mkdir %s/c && touch %s/c/x", dir, dir, dir);
	assert_int_equal(system(p), 0);
	r.prev = old;
	assert_non_null(cur = nx_snap_read(fd, &r));
	assert_ptr_equal(nx_snap_find(nx_snap_find(cur, "a", 1), "g", 1), g);
	assert_ptr_equal(nx_snap_find(cur, "b", 1), b);
	assert_ptr_not_equal(nx_snap_find(nx_snap_find(cur, "a", 1), "f", 1), f);
	assert_ptr_not_equal(nx_snap_find(nx_snap_find(cur, "c", 1), "x", 1), x);
	assert_null(nx_snap_find(old, "b", 1)); /* taken */
	assert_ptr_equal(nx_snap_find(nx_snap_find(old, "a", 1), "f", 1), f);
	{
		struct nx_sdiff_watch w = { .old = old, .cur = cur,
					    .flags = NX_SDIFF_RECURSIVE | NX_SDIFF_LIST };
		static struct rec rc;
		uint32_t cookie = 0;
		const char *d;

		memset(&rc, 0, sizeof(rc));
		rc.models = &m;
		assert_int_equal(nx_snap_diff(&w, 1, &cookie, record, &rc), 0);
		assert_non_null(strstr(rc.text, "0:modify a/f"));
		assert_null(strstr(rc.text, " b"));
		assert_null(strstr(rc.text, "a/g"));
		sm_from_tree(&want, cur);
		if ((d = sm_diff(&m, &want)))
			fail_msg("%s; events: %s", d, rc.text);
		sm_free(&want);
		sm_free(&m);
	}
	nx_snap_free(old);
	nx_snap_free(cur);
	close(fd);
	snprintf(p, sizeof(p), "rm -rf %s", dir);
	assert_int_equal(system(p), 0);
}

/* Copies src into dir as a repair's listing would, taking t->old's nodes
 * over where it can. */
static void take_copy(struct nx_stake *t, struct nx_snode *dir, const struct nx_snode *src)
{
	for (uint32_t i = 0; i < src->nkids; i++) {
		const struct nx_snode *k = src->kids[i];
		struct nx_snode *n = nx_snap_take(t, dir, k->name, k->name_len, &k->a);
		if (!n)
			assert_non_null(n = nx_snap_add(dir, k->name, k->name_len, &k->a));
		n->entered = k->entered;
		take_copy(t, n, k);
	}
}

static struct nx_snode *at(struct nx_snode *root, const char *path)
{
	const char *slash;

	for (; (slash = strchr(path, '/')); path = slash + 1)
		assert_non_null(root = nx_snap_find(root, path, (size_t)(slash - path)));
	return nx_snap_find(root, path, strlen(path));
}

/* The diff of from -> to when to is listed into a new tree that takes
 * from's unchanged files over (and gives them back first, with give_back):
 * the events are those of the diff of two separate trees.  taken names the
 * files that were taken (nodes of the old tree in the new one), apart the
 * ones that were not. */
static void check_take(const char *from, const char *to, const char *taken, const char *copied,
		       bool give_back)
{
	struct nx_snode *old = build(from), *src = build(to), *cur = nx_snap_empty(src), *n, *told;
	struct nx_stake t = { .old = old };
	struct nx_snode *was[8];
	char want[8192], names[256], *save = NULL;
	const char *name;
	size_t k = 0;

	snprintf(want, sizeof(want), "%s", diff1(from, to));
	snprintf(names, sizeof(names), "%s", taken);
	for (name = strtok_r(names, " ", &save); name; name = strtok_r(NULL, " ", &save))
		assert_non_null(was[k++] = at(old, name));
	assert_non_null(cur);
	take_copy(&t, cur, src);
	nx_snap_free(src);
	if (give_back)
		nx_snap_give_back(&t);
	k = 0;
	snprintf(names, sizeof(names), "%s", taken);
	for (name = strtok_r(names, " ", &save); name; name = strtok_r(NULL, " ", &save), k++) {
		assert_non_null(n = at(cur, name));
		if (give_back) { /* a copy in the new tree; the old has its own again */
			assert_ptr_not_equal(n, was[k]);
			assert_ptr_equal(at(old, name), was[k]);
		} else {
			assert_ptr_equal(n, was[k]);
		}
	}
	snprintf(names, sizeof(names), "%s", copied);
	for (name = strtok_r(names, " ", &save); name; name = strtok_r(NULL, " ", &save))
		assert_ptr_not_equal(at(cur, name), at(old, name));
	assert_false(t.lost);
	nx_snap_take_end(&t);
	assert_null(t.old);
	told = build(from); /* (old lost what was taken) */
	assert_string_equal(diff_told(&old, &cur, (uint32_t[]){ NX_SDIFF_RECURSIVE | NX_SDIFF_LIST },
				      1, &told), want);
}

static void take_unchanged_files(void **state)
{
	(void)state;
	/* Unchanged: taken; modified, with new attributes, in a directory
	 * that is another one now, or a directory: not. */
	check_take("a/=2 a/f=3,s=7 a/g=4 b=5 c=11,p=420 d/=6 d/x=7 e/=8",
		   "a/=2 a/f=3,s=8 a/g=4 b=5 c=11,p=384 d/=9 d/x=7 e/=8 n=10",
		   "a/g b", "a/f c d d/x e", false);
	/* Moved files and replaced ones are the diff's, as before. */
	check_take("a=2 b=3 d/=4 d/f=5 d/g=6", "b=2 a=3,b=1 d/=4 d/f=5 d/h=6", "d/f",
		   "a b d/h", false);
	/* Nothing changed: everything is taken, nothing reported. */
	check_take("a=2 d/=3 d/f=4 d/e/=5 d/e/g=6", "a=2 d/=3 d/f=4 d/e/=5 d/e/g=6",
		   "a d/f d/e/g", "d d/e", false);
}

static void give_back_restores(void **state)
{
	(void)state;
	check_take("a/=2 a/f=3,s=7 a/g=4 b=5 d/=6 d/x=7", "a/=2 a/f=3,s=8 a/g=4 b=5 d/=9 d/x=7",
		   "a/g b", "a/f", true);
}

/* Entries added in name order, in its reverse (as tmpfs lists), and in
 * neither, end sorted with each name once: an insert past either end of a
 * directory's names skips the search, and a name already there at either
 * end is refused all the same. */
static void insert_any_order(void **state)
{
	static const char *const orders[] = { "a b c d e f", "f e d c b a", "c a f b e d",
					      "b d a f c e" };
	struct nx_sattr ra = { .ino = 1, .dev = 1, .mode = S_IFDIR | 0755 };
	struct nx_sattr a = { .dev = 1, .mode = S_IFREG | 0644 };

	(void)state;
	for (size_t o = 0; o < sizeof(orders) / sizeof(orders[0]); o++) {
		struct nx_snode *root = nx_snap_add(NULL, "", 0, &ra);
		const char *p;

		assert_non_null(root);
		for (p = orders[o]; *p; p += p[1] ? 2 : 1) {
			a.ino++;
			assert_non_null(nx_snap_add(root, p, 1, &a));
		}
		assert_int_equal(root->nkids, 6);
		for (uint32_t i = 0; i < root->nkids; i++) {
			assert_int_equal(root->kids[i]->name_len, 1);
			assert_int_equal(root->kids[i]->name[0], 'a' + (int)i);
			assert_ptr_equal(nx_snap_find(root, root->kids[i]->name, 1), root->kids[i]);
		}
		/* The first, the last and a middle name again, and names
		 * longer than an end's (the shorter first on a tie). */
		for (p = "afc"; *p; p++) {
			errno = 0;
			assert_null(nx_snap_add(root, p, 1, &a));
			assert_int_equal(errno, EEXIST);
		}
		assert_non_null(nx_snap_add(root, "ff", 2, &a));
		assert_non_null(nx_snap_add(root, "a0", 2, &a));
		assert_int_equal(root->nkids, 8);
		assert_string_equal(root->kids[1]->name, "a0");
		assert_string_equal(root->kids[7]->name, "ff");
		nx_snap_free(root);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(nothing),
		cmocka_unit_test(create_delete),
		cmocka_unit_test(rename_by_inode),
		cmocka_unit_test(inode_reuse_is_not_rename),
		cmocka_unit_test(modify_attrib),
		cmocka_unit_test(replaced),
		cmocka_unit_test(exchange),
		cmocka_unit_test(chains_and_cycles),
		cmocka_unit_test(into_new_directory),
		cmocka_unit_test(between_watches),
		cmocka_unit_test(cookies_differ),
		cmocka_unit_test(unread_directory_keeps_listing),
		cmocka_unit_test(remount_is_overflow),
		cmocka_unit_test(relist_marked_only),
		cmocka_unit_test(read_takes_unchanged_files),
		cmocka_unit_test(take_unchanged_files),
		cmocka_unit_test(give_back_restores),
		cmocka_unit_test(insert_any_order),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
