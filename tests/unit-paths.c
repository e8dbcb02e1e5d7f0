/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests of the path table (libnotifyx/paths.c): add, find, rename
 * (including under another parent, with descendants' paths following at
 * once), unlink, free_tree's drop order, foreach's order, nx_node_path's
 * limits and nx_join. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nx.h"

static struct nx_watch W1, W2;

static const char *path_of(const struct nx_node *n)
{
	static char buf[4][PATH_MAX];
	static int k;
	char *b = buf[k++ % 4];
	size_t len = nx_node_path(n, b, PATH_MAX);

	assert_int_not_equal(len, SIZE_MAX);
	assert_int_equal(strlen(b), len);
	return b;
}

static struct nx_node *find(const struct nx_paths *t, const struct nx_node *parent,
			    const char *name)
{
	return nx_node_find(t, parent, name, strlen(name));
}

static struct nx_node *add(struct nx_paths *t, struct nx_node *parent, const char *name)
{
	struct nx_node *n = nx_node_add(t, parent, name, strlen(name));

	assert_non_null(n);
	return n;
}

/* The node at a "/"-separated path below root, or NULL. */
static struct nx_node *lookup(const struct nx_paths *t, struct nx_node *root, const char *path)
{
	struct nx_node *n = root;
	const char *p = path;

	while (n && *p) {
		const char *s = strchr(p, '/');
		size_t len = s ? (size_t)(s - p) : strlen(p);
		n = nx_node_find(t, n, p, len);
		p += len + (s ? 1 : 0);
	}
	return n;
}

/* Adds every path of the list (parents listed before children). */
static void build(struct nx_paths *t, struct nx_node *root, const char *const *paths, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const char *slash = strrchr(paths[i], '/');
		struct nx_node *parent = root;
		char dir[PATH_MAX];

		if (slash) {
			memcpy(dir, paths[i], (size_t)(slash - paths[i]));
			dir[slash - paths[i]] = '\0';
			parent = lookup(t, root, dir);
			assert_non_null(parent);
		}
		struct nx_node *c = add(t, parent, slash ? slash + 1 : paths[i]);
		assert_string_equal(path_of(c), paths[i]);
	}
}

static size_t nchildren(const struct nx_node *n)
{
	size_t k = 0;

	for (const struct nx_node *c = n->child; c; c = c->next) {
		assert_ptr_equal(c->parent, n);
		if (c->next)
			assert_ptr_equal(c->next->prev, c);
		k++;
	}
	if (n->child)
		assert_null(n->child->prev);
	return k;
}

static bool has_child(const struct nx_node *n, const struct nx_node *c)
{
	for (const struct nx_node *x = n->child; x; x = x->next)
		if (x == c)
			return true;
	return false;
}

static const char *const tree1[] = {
	"a", "a/b", "a/b/c", "a/b/c/d", "a/b/e", "a/f", "ab", "x", "x/y", "x/a", "x/a/b",
};
#define NTREE1 (sizeof(tree1) / sizeof(tree1[0]))

static void test_root(void **state)
{
	struct nx_node *root = nx_node_new_root(&W1);
	char buf[4] = "ZZZ";

	(void)state;
	assert_non_null(root);
	assert_null(root->parent);
	assert_null(root->child);
	assert_ptr_equal(nx_node_watch(root), &W1);
	assert_string_equal(nx_node_name(root), "");
	assert_int_equal(nx_node_name_len(root), 0);
	assert_int_equal(nx_node_path(root, buf, 1), 0);
	assert_string_equal(buf, "");
	assert_int_equal(nx_node_path(root, buf, 0), SIZE_MAX);
	struct nx_paths t = { 0 };
	nx_node_free_tree(&t, root, NULL, NULL);
	nx_paths_free(&t);
}

static void test_add_find(void **state)
{
	struct nx_paths t = { 0 };
	struct nx_node *root = nx_node_new_root(&W1);

	(void)state;
	build(&t, root, tree1, NTREE1);
	assert_int_equal(t.t.len, NTREE1);
	for (size_t i = 0; i < NTREE1; i++) {
		struct nx_node *n = lookup(&t, root, tree1[i]);
		assert_non_null(n);
		assert_string_equal(path_of(n), tree1[i]);
		assert_ptr_equal(nx_node_watch(n), &W1);
		assert_int_equal(nx_node_name_len(n), strlen(nx_node_name(n)));
		assert_true(has_child(n->parent, n));
	}
	struct nx_node *a = find(&t, root, "a"), *ab = find(&t, root, "ab"), *x = find(&t, root, "x");
	assert_non_null(a);
	assert_non_null(ab);
	assert_ptr_not_equal(a, ab);
	/* the same name under two parents: two nodes */
	assert_ptr_not_equal(lookup(&t, root, "a/b"), lookup(&t, root, "x/a/b"));
	/* names are compared with their length: no prefix matches */
	assert_ptr_equal(nx_node_find(&t, root, "abc", 1), a);
	assert_ptr_equal(nx_node_find(&t, root, "abc", 2), ab);
	assert_null(nx_node_find(&t, root, "abc", 3));
	assert_null(nx_node_find(&t, root, "", 0));
	/* the right name under the wrong parent */
	assert_null(find(&t, x, "b"));
	assert_null(find(&t, root, "b"));
	assert_null(find(&t, a, "a"));
	assert_int_equal(nchildren(root), 3);
	assert_int_equal(nchildren(a), 2);
	assert_int_equal(nchildren(lookup(&t, root, "a/b/c/d")), 0);
	/* a name given with a length is copied, not referenced */
	char tmp[] = "tmpnameXX";
	struct nx_node *tn = nx_node_add(&t, x, tmp, 7);
	assert_non_null(tn);
	memset(tmp, '#', sizeof(tmp) - 1);
	assert_string_equal(nx_node_name(tn), "tmpname");
	assert_ptr_equal(find(&t, x, "tmpname"), tn);
	assert_string_equal(path_of(tn), "x/tmpname");
	nx_node_free_tree(&t, root, NULL, NULL);
	assert_int_equal(t.t.len, 0);
	nx_paths_free(&t);
}

static void test_many_siblings(void **state)
{
	struct nx_paths t = { 0 };
	struct nx_node *root = nx_node_new_root(&W1);
	struct nx_node *p = add(&t, root, "p"), *q = add(&t, root, "q");
	static struct nx_node *np[3000], *nq[3000];
	char name[32];

	(void)state;
	for (int i = 0; i < 3000; i++) {
		snprintf(name, sizeof(name), "n%d", i);
		np[i] = add(&t, p, name);
		nq[i] = add(&t, q, name);
	}
	assert_int_equal(nchildren(p), 3000);
	assert_int_equal(t.t.len, 6002);
	for (int i = 0; i < 3000; i++) {
		snprintf(name, sizeof(name), "n%d", i);
		assert_ptr_equal(find(&t, p, name), np[i]);
		assert_ptr_equal(find(&t, q, name), nq[i]);
	}
	/* unlink every other one under p; free them */
	for (int i = 0; i < 3000; i += 2) {
		nx_node_unlink(&t, np[i]);
		assert_null(np[i]->parent);
		nx_node_free_tree(&t, np[i], NULL, NULL);
	}
	assert_int_equal(nchildren(p), 1500);
	assert_int_equal(t.t.len, 4502);
	for (int i = 0; i < 3000; i++) {
		snprintf(name, sizeof(name), "n%d", i);
		if (i % 2)
			assert_ptr_equal(find(&t, p, name), np[i]);
		else
			assert_null(find(&t, p, name));
		assert_ptr_equal(find(&t, q, name), nq[i]);
	}
	nx_node_free_tree(&t, root, NULL, NULL);
	assert_int_equal(t.t.len, 0);
	nx_paths_free(&t);
}

/* Several nodes under one (parent, name): the intermediate state of an
 * exchange.  Each can be taken out; find sees the others. */
static void test_same_name_chain(void **state)
{
	struct nx_paths t = { 0 };
	struct nx_node *root = nx_node_new_root(&W1);
	struct nx_node *x = add(&t, root, "x"), *y = add(&t, root, "y"), *z = add(&t, root, "z");

	(void)state;
	assert_int_equal(nx_node_rename(&t, y, root, "x", 1), 0);
	assert_int_equal(nx_node_rename(&t, z, root, "x", 1), 0);
	assert_null(find(&t, root, "y"));
	assert_null(find(&t, root, "z"));
	struct nx_node *f = find(&t, root, "x");
	assert_true(f == x || f == y || f == z);
	/* take them out one by one, the middle one first */
	nx_node_unlink(&t, y);
	f = find(&t, root, "x");
	assert_true(f == x || f == z);
	nx_node_unlink(&t, f);
	struct nx_node *last = f == x ? z : x;
	assert_ptr_equal(find(&t, root, "x"), last);
	nx_node_unlink(&t, last);
	assert_null(find(&t, root, "x"));
	assert_int_equal(t.t.len, 0);
	assert_null(root->child);
	nx_node_free_tree(&t, x, NULL, NULL);
	nx_node_free_tree(&t, y, NULL, NULL);
	nx_node_free_tree(&t, z, NULL, NULL);
	nx_node_free_tree(&t, root, NULL, NULL);
	nx_paths_free(&t);
}

/* Swapping two directories' names by two renames, as an exchange does. */
static void test_exchange(void **state)
{
	struct nx_paths t = { 0 };
	struct nx_node *root = nx_node_new_root(&W1);
	static const char *const paths[] = { "d", "d/A", "d/A/in-a", "e", "e/B", "e/B/in-b" };

	(void)state;
	build(&t, root, paths, 6);
	struct nx_node *A = lookup(&t, root, "d/A"), *B = lookup(&t, root, "e/B");
	struct nx_node *d = A->parent, *e = B->parent;
	assert_int_equal(nx_node_rename(&t, A, e, "B", 1), 0);
	assert_int_equal(nx_node_rename(&t, B, d, "A", 1), 0);
	assert_ptr_equal(lookup(&t, root, "e/B"), A);
	assert_ptr_equal(lookup(&t, root, "d/A"), B);
	assert_string_equal(path_of(lookup(&t, root, "e/B/in-a")), "e/B/in-a");
	assert_string_equal(path_of(lookup(&t, root, "d/A/in-b")), "d/A/in-b");
	assert_null(lookup(&t, root, "d/A/in-a"));
	assert_int_equal(t.t.len, 6);
	nx_node_free_tree(&t, root, NULL, NULL);
	nx_paths_free(&t);
}

static void test_rename(void **state)
{
	struct nx_paths t = { 0 };
	struct nx_node *root = nx_node_new_root(&W1);

	(void)state;
	build(&t, root, tree1, NTREE1);
	struct nx_node *a = lookup(&t, root, "a"), *b = lookup(&t, root, "a/b");
	struct nx_node *c = lookup(&t, root, "a/b/c"), *d = lookup(&t, root, "a/b/c/d");
	struct nx_node *e = lookup(&t, root, "a/b/e"), *y = lookup(&t, root, "x/y");
	const char *cname = nx_node_name(c), *dname = nx_node_name(d), *ename = nx_node_name(e);

	/* a new name in the same parent */
	assert_int_equal(nx_node_rename(&t, b, a, "B2", 2), 0);
	assert_string_equal(path_of(b), "a/B2");
	assert_null(find(&t, a, "b"));
	assert_ptr_equal(find(&t, a, "B2"), b);
	assert_string_equal(path_of(d), "a/B2/c/d");
	assert_string_equal(path_of(e), "a/B2/e");

	/* under another parent, deeper, with a name given by length */
	assert_int_equal(nx_node_rename(&t, b, y, "moved-tail", 5), 0);
	assert_string_equal(nx_node_name(b), "moved");
	assert_int_equal(nx_node_name_len(b), 5);
	assert_ptr_equal(b->parent, y);
	assert_true(has_child(y, b));
	assert_false(has_child(a, b));
	assert_int_equal(nchildren(a), 1);
	assert_null(find(&t, a, "B2"));
	assert_ptr_equal(find(&t, y, "moved"), b);
	assert_ptr_equal(lookup(&t, root, "x/y/moved/c/d"), d);
	assert_string_equal(path_of(b), "x/y/moved");
	assert_string_equal(path_of(c), "x/y/moved/c");
	assert_string_equal(path_of(d), "x/y/moved/c/d");
	assert_string_equal(path_of(e), "x/y/moved/e");
	/* the descendants were not touched: same nodes, parents and names */
	assert_ptr_equal(c->parent, b);
	assert_ptr_equal(d->parent, c);
	assert_ptr_equal(e->parent, b);
	assert_ptr_equal(nx_node_name(c), cname);
	assert_ptr_equal(nx_node_name(d), dname);
	assert_ptr_equal(nx_node_name(e), ename);
	assert_ptr_equal(find(&t, b, "c"), c);
	assert_ptr_equal(find(&t, c, "d"), d);

	/* up to the root, over an existing sibling's name prefix */
	assert_int_equal(nx_node_rename(&t, c, root, "a2", 2), 0);
	assert_string_equal(path_of(c), "a2");
	assert_string_equal(path_of(d), "a2/d");
	assert_ptr_equal(lookup(&t, root, "a2/d"), d);
	assert_null(lookup(&t, root, "x/y/moved/c"));
	assert_ptr_equal(lookup(&t, root, "x/y/moved/e"), e);

	/* a whole top directory under a sibling's descendant */
	struct nx_node *xa = lookup(&t, root, "x/a/b");
	assert_int_equal(nx_node_rename(&t, a, xa, "a", 1), 0);
	assert_string_equal(path_of(lookup(&t, root, "x/a/b/a/f")), "x/a/b/a/f");
	assert_null(find(&t, root, "a"));
	assert_int_equal(t.t.len, NTREE1);
	/* every node is still reachable by name from the root */
	size_t count = 0;
	for (size_t i = 0; i < 64; i++) {
		static const char *const now[] = {
			"a2", "a2/d", "ab", "x", "x/y", "x/y/moved", "x/y/moved/e",
			"x/a", "x/a/b", "x/a/b/a", "x/a/b/a/f",
		};
		if (i >= sizeof(now) / sizeof(now[0]))
			break;
		struct nx_node *n = lookup(&t, root, now[i]);
		assert_non_null(n);
		assert_string_equal(path_of(n), now[i]);
		count++;
	}
	assert_int_equal(count, NTREE1);
	nx_node_free_tree(&t, root, NULL, NULL);
	assert_int_equal(t.t.len, 0);
	nx_paths_free(&t);
}

/* A rename of a directory high in a deep tree is seen by every path below
 * it at once. */
/* A name lives in its node's allocation while it fits there (issue 6: one
 * malloc less per directory); a longer one gets its own, and a shorter one
 * later goes back.  Renaming to the name the node has, passed as its own
 * storage, keeps it.  ASan and valgrind runs check the storage rules. */
static void test_rename_name_storage(void **state)
{
	struct nx_paths t = { 0 };
	struct nx_node *root = nx_node_new_root(&W1);
	struct nx_node *n = nx_node_add(&t, root, "abcd", 4);
	static const char long_name[] = "a name longer than the one the node was made with";

	(void)state;
	assert_non_null(n);
	assert_false(n->long_name);
	assert_ptr_equal(nx_node_name(n), n->name_);
	assert_int_equal(nx_node_rename(&t, n, root, "xy", 2), 0);
	assert_string_equal(nx_node_name(n), "xy");
	assert_false(n->long_name);
	assert_ptr_equal(find(&t, root, "xy"), n);
	assert_null(find(&t, root, "abcd"));
	assert_int_equal(nx_node_rename(&t, n, root, long_name, strlen(long_name)), 0);
	assert_true(n->long_name);
	assert_string_equal(nx_node_name(n), long_name);
	assert_int_equal(nx_node_name_len(n), strlen(long_name));
	assert_ptr_equal(find(&t, root, long_name), n);
	assert_null(find(&t, root, "xy"));
	assert_int_equal(nx_node_rename(&t, n, root, nx_node_name(n), nx_node_name_len(n)), 0);
	assert_string_equal(nx_node_name(n), long_name);
	assert_ptr_equal(find(&t, root, long_name), n);
	/* a name given with a prefix of the long one: no prefix matches */
	assert_null(nx_node_find(&t, root, long_name, 6));
	assert_int_equal(nx_node_rename(&t, n, root, "wxyz", 4), 0);
	assert_false(n->long_name);
	assert_string_equal(nx_node_name(n), "wxyz");
	assert_ptr_equal(find(&t, root, "wxyz"), n);
	assert_null(find(&t, root, long_name));
	assert_int_equal(nx_node_rename(&t, n, root, nx_node_name(n) + 1, 3), 0);
	assert_string_equal(nx_node_name(n), "xyz");
	assert_ptr_equal(find(&t, root, "xyz"), n);
	/* from inline storage to its own, the name given from the node itself */
	assert_int_equal(nx_node_rename(&t, n, root, long_name, strlen(long_name)), 0);
	assert_int_equal(nx_node_rename(&t, n, root, nx_node_name(n) + 2, 4), 0);
	assert_string_equal(nx_node_name(n), "name");
	assert_int_equal(nx_node_rename(&t, n, root, "qq", 2), 0);
	assert_int_equal(nx_node_rename(&t, n, root, long_name, strlen(long_name)), 0);
	nx_node_free_tree(&t, root, NULL, NULL); /* frees the long name too */
	nx_paths_free(&t);
}

/* The nodes of one kernel object: one is the set itself (no allocation),
 * more an array, newest first; back to one when the others go. */
static void test_subs(void **state)
{
	struct nx_paths t = { 0 };
	struct nx_node *root = nx_node_new_root(&W1);
	struct nx_node *n[6];
	nx_subs s = 0;

	(void)state;
	for (int i = 0; i < 6; i++)
		n[i] = add(&t, root, (const char *[]){ "a", "b", "c", "d", "e", "f" }[i]);
	assert_null(nx_subs_get(s, 0));
	nx_subs_del(&s, n[0]); /* not there: nothing */
	assert_int_equal(nx_subs_add(&s, n[0]), 0);
	assert_int_equal(s, (uintptr_t)n[0]);
	assert_ptr_equal(nx_subs_get(s, 0), n[0]);
	assert_null(nx_subs_get(s, 1));
	nx_subs_del(&s, n[1]);
	assert_int_equal(s, (uintptr_t)n[0]);
	for (int i = 1; i < 6; i++) /* past the first array's capacity */
		assert_int_equal(nx_subs_add(&s, n[i]), 0);
	for (int i = 0; i < 6; i++)
		assert_ptr_equal(nx_subs_get(s, (size_t)i), n[5 - i]);
	assert_null(nx_subs_get(s, 6));
	nx_subs_del(&s, n[3]);
	nx_subs_del(&s, n[5]);
	nx_subs_del(&s, n[0]);
	nx_subs_del(&s, n[0]);
	assert_ptr_equal(nx_subs_get(s, 0), n[4]);
	assert_ptr_equal(nx_subs_get(s, 1), n[2]);
	assert_ptr_equal(nx_subs_get(s, 2), n[1]);
	assert_null(nx_subs_get(s, 3));
	nx_subs_del(&s, n[4]);
	nx_subs_del(&s, n[1]);
	assert_int_equal(s, (uintptr_t)n[2]); /* one: the array went */
	nx_subs_del(&s, n[2]);
	assert_int_equal(s, 0);
	assert_int_equal(nx_subs_add(&s, n[0]), 0);
	assert_int_equal(nx_subs_add(&s, n[1]), 0);
	nx_subs_free(&s); /* the array too (ASan, valgrind) */
	assert_int_equal(s, 0);
	nx_node_free_tree(&t, root, NULL, NULL);
	nx_paths_free(&t);
}

static void test_rename_deep(void **state)
{
	struct nx_paths t = { 0 };
	struct nx_node *root = nx_node_new_root(&W1);
	struct nx_node *top = add(&t, root, "top"), *other = add(&t, root, "other");
	struct nx_node *n = top, *leaf;
	char want[PATH_MAX];

	(void)state;
	for (int i = 0; i < 200; i++)
		n = add(&t, n, "d");
	leaf = n;
	assert_int_equal(nx_node_rename(&t, top, other, "renamed", 7), 0);
	strcpy(want, "other/renamed");
	for (int i = 0; i < 200; i++)
		strcat(want, "/d");
	assert_string_equal(path_of(leaf), want);
	nx_node_free_tree(&t, root, NULL, NULL);
	assert_int_equal(t.t.len, 0);
	nx_paths_free(&t);
}

static void test_unlink(void **state)
{
	struct nx_paths t = { 0 };
	struct nx_node *root = nx_node_new_root(&W1);

	(void)state;
	build(&t, root, tree1, NTREE1);
	struct nx_node *a = find(&t, root, "a"), *b = find(&t, a, "b"), *d = lookup(&t, root, "a/b/c/d");
	nx_node_unlink(&t, b);
	assert_null(b->parent);
	/* it stays of its watch (no parent: no sibling link either) */
	assert_ptr_equal(nx_node_watch(b), &W1);
	assert_ptr_equal(nx_node_watch(d), &W1);
	assert_null(find(&t, a, "b"));
	assert_false(has_child(a, b));
	assert_int_equal(nchildren(a), 1);
	/* its subtree stays as it was, now relative to b */
	assert_string_equal(path_of(d), "c/d");
	assert_ptr_equal(find(&t, b, "c"), d->parent);
	assert_int_equal(t.t.len, NTREE1 - 1);
	/* unlinking a root, or twice, does nothing */
	nx_node_unlink(&t, root);
	nx_node_unlink(&t, b);
	assert_int_equal(t.t.len, NTREE1 - 1);
	nx_node_free_tree(&t, b, NULL, NULL);
	assert_int_equal(t.t.len, NTREE1 - 4); /* b, c, d, e */
	assert_null(lookup(&t, root, "a/b"));
	assert_string_equal(path_of(lookup(&t, root, "a/f")), "a/f");
	nx_node_free_tree(&t, root, NULL, NULL);
	assert_int_equal(t.t.len, 0);
	nx_paths_free(&t);
}

/* ---- free_tree and foreach orders ---- */

struct rec {
	char *path[2000];
	struct nx_node *node[2000];
	size_t n;
};

static void record_drop(void *ctx, struct nx_node *n)
{
	struct rec *r = ctx;

	assert_true(r->n < 2000);
	/* the path still works: the parents are still there */
	r->path[r->n] = strdup(path_of(n));
	r->node[r->n] = n;
	r->n++;
}

static bool is_below(const char *p, const char *dir)
{
	size_t l = strlen(dir);

	if (!l)
		return *p != '\0';
	return !strncmp(p, dir, l) && p[l] == '/';
}

/* A random tree of n directories below parent; returns their paths relative
 * to base (whose path is given). */
static size_t random_tree(struct nx_paths *t, struct nx_node *base, size_t n, char **paths,
			  unsigned seed)
{
	struct nx_node *nodes[2000];
	size_t k = 0;

	nodes[k] = base;
	paths[k++] = strdup("");
	for (size_t i = 1; i <= n; i++) {
		seed = seed * 1103515245u + 12345u;
		size_t pi = (seed >> 8) % k;
		char name[32];
		snprintf(name, sizeof(name), "n%zu", i);
		nodes[k] = add(t, nodes[pi], name);
		char buf[PATH_MAX];
		snprintf(buf, sizeof(buf), "%s%s%s", paths[pi], *paths[pi] ? "/" : "", name);
		paths[k++] = strdup(buf);
	}
	return k;
}

static void test_free_tree_order(void **state)
{
	struct nx_paths t = { 0 };
	struct nx_node *root = nx_node_new_root(&W1);
	struct nx_node *keep = add(&t, root, "keep"), *sub = add(&t, root, "sub");
	static char *paths[2000];
	static struct rec r;

	(void)state;
	add(&t, keep, "k1");
	/* paths relative to sub: sub itself is "" */
	size_t k = random_tree(&t, sub, 500, paths, 7);
	assert_int_equal(k, 501);
	assert_int_equal(t.t.len, 3 + 500);
	memset(&r, 0, sizeof(r));
	nx_node_free_tree(&t, sub, record_drop, &r);
	/* every node dropped exactly once */
	assert_int_equal(r.n, k);
	for (size_t i = 0; i < k; i++) {
		size_t hits = 0;
		for (size_t j = 0; j < r.n; j++)
			hits += !strcmp(paths[i], r.path[j]);
		if (hits != 1)
			print_error("\"%s\" dropped %zu times\n", paths[i], hits);
		assert_int_equal(hits, 1);
	}
	/* children before parents: nothing dropped later lies below */
	for (size_t i = 0; i < r.n; i++)
		for (size_t j = i + 1; j < r.n; j++)
			if (is_below(r.path[j], r.path[i])) {
				print_error("\"%s\" dropped after its ancestor \"%s\"\n", r.path[j],
					    r.path[i]);
				fail();
			}
	assert_string_equal(r.path[r.n - 1], "");
	/* the rest of the table is intact */
	assert_int_equal(t.t.len, 2);
	assert_null(find(&t, root, "sub"));
	assert_ptr_equal(find(&t, root, "keep"), keep);
	assert_string_equal(path_of(find(&t, keep, "k1")), "keep/k1");
	assert_int_equal(nchildren(root), 1);
	for (size_t i = 0; i < r.n; i++)
		free(r.path[i]);
	for (size_t i = 0; i < k; i++)
		free(paths[i]);
	/* the whole tree, root included */
	memset(&r, 0, sizeof(r));
	nx_node_free_tree(&t, root, record_drop, &r);
	assert_int_equal(r.n, 3);
	assert_string_equal(r.path[0], "keep/k1");
	assert_string_equal(r.path[1], "keep");
	assert_string_equal(r.path[2], "");
	assert_ptr_equal(r.node[2], root);
	assert_int_equal(t.t.len, 0);
	for (size_t i = 0; i < r.n; i++)
		free(r.path[i]);
	nx_paths_free(&t);
}

static void count_visit(void *ctx, struct nx_node *n)
{
	struct rec *r = ctx;

	assert_true(r->n < 2000);
	/* parents first: the parent was visited, unless n is where the walk began */
	if (r->n > 0) {
		assert_non_null(n->parent);
		assert_non_null(n->parent->kref);
	}
	/* each node once */
	assert_null(n->kref);
	n->kref = (void *)(uintptr_t)(r->n + 1);
	r->node[r->n] = n;
	r->path[r->n] = strdup(path_of(n));
	r->n++;
}

static void clear_kref(void *ctx, struct nx_node *n)
{
	(void)ctx;
	n->kref = NULL;
}

static void test_foreach(void **state)
{
	struct nx_paths t = { 0 };
	struct nx_node *root = nx_node_new_root(&W1);
	static char *paths[2000];
	static struct rec r;

	(void)state;
	size_t k = random_tree(&t, root, 700, paths, 99);
	memset(&r, 0, sizeof(r));
	nx_node_foreach(root, count_visit, &r);
	assert_int_equal(r.n, k);
	assert_ptr_equal(r.node[0], root);
	for (size_t i = 0; i < k; i++) {
		size_t hits = 0;
		for (size_t j = 0; j < r.n; j++)
			hits += !strcmp(paths[i], r.path[j]);
		assert_int_equal(hits, 1);
	}
	for (size_t i = 0; i < r.n; i++)
		free(r.path[i]);

	/* A subtree: the walk stays inside it, though it has siblings. */
	nx_node_foreach(root, clear_kref, NULL);
	struct nx_node *sub = NULL;
	size_t subsize = 0;
	for (struct nx_node *c = root->child; c; c = c->next) {
		size_t below = 0;
		for (size_t i = 0; i < k; i++)
			below += !strcmp(paths[i], path_of(c)) || is_below(paths[i], path_of(c));
		if (below > subsize && c->next) { /* a sibling after it */
			sub = c;
			subsize = below;
		}
	}
	assert_non_null(sub);
	assert_true(subsize > 1);
	const char *subpath = strdup(path_of(sub));
	memset(&r, 0, sizeof(r));
	nx_node_foreach(sub, count_visit, &r);
	assert_int_equal(r.n, subsize);
	assert_ptr_equal(r.node[0], sub);
	for (size_t i = 1; i < r.n; i++)
		assert_true(is_below(r.path[i], subpath));
	for (size_t i = 0; i < r.n; i++)
		free(r.path[i]);
	free((void *)subpath);

	/* A leaf with siblings: only itself. */
	nx_node_foreach(root, clear_kref, NULL);
	struct nx_node *leaf = NULL;
	for (size_t i = 1; i < k && !leaf; i++) {
		struct nx_node *c = lookup(&t, root, paths[i]);
		if (!c->child && c->next)
			leaf = c;
	}
	assert_non_null(leaf);
	memset(&r, 0, sizeof(r));
	nx_node_foreach(leaf, count_visit, &r);
	assert_int_equal(r.n, 1);
	free(r.path[0]);

	nx_node_foreach(root, clear_kref, NULL);
	for (size_t i = 0; i < k; i++)
		free(paths[i]);
	nx_node_free_tree(&t, root, NULL, NULL);
	assert_int_equal(t.t.len, 0);
	nx_paths_free(&t);
}

/* Deeper than any stack would allow with recursion. */
static void count_only(void *ctx, struct nx_node *n)
{
	(void)n;
	(*(size_t *)ctx)++;
}

static void test_deep_chain(void **state)
{
	struct nx_paths t = { 0 };
	struct nx_node *root = nx_node_new_root(&W1), *n = root;
	size_t visits = 0, drops = 0;
	char buf[PATH_MAX];

	(void)state;
	for (int i = 0; i < 200000; i++)
		n = add(&t, n, "d");
	nx_node_foreach(root, count_only, &visits);
	assert_int_equal(visits, 200001);
	assert_int_equal(nx_node_path(n, buf, sizeof(buf)), SIZE_MAX);
	nx_node_free_tree(&t, root, count_only, &drops);
	assert_int_equal(drops, 200001);
	assert_int_equal(t.t.len, 0);
	nx_paths_free(&t);
}

static void test_node_path_limits(void **state)
{
	struct nx_paths t = { 0 };
	struct nx_node *root = nx_node_new_root(&W2);
	static const char *const p[] = { "ab", "ab/cd", "ab/cd/e" };
	char buf[32];

	(void)state;
	build(&t, root, p, 3);
	struct nx_node *e = lookup(&t, root, "ab/cd/e");
	assert_ptr_equal(nx_node_watch(e), &W2);
	/* "ab/cd/e" is 7 bytes: it needs size 8 */
	memset(buf, 'Z', sizeof(buf));
	assert_int_equal(nx_node_path(e, buf, 8), 7);
	assert_string_equal(buf, "ab/cd/e");
	assert_int_equal(buf[8], 'Z');
	for (size_t size = 0; size < 8; size++) {
		memset(buf, 'Z', sizeof(buf));
		size_t got = nx_node_path(e, buf, size);
		if (got != SIZE_MAX)
			print_error("size %zu: got %zu, expected SIZE_MAX\n", size, got);
		assert_int_equal(got, SIZE_MAX);
		for (size_t i = size; i < sizeof(buf); i++)
			assert_int_equal(buf[i], 'Z'); /* nothing written past size */
	}
	/* a path longer than PATH_MAX - 1 */
	struct nx_node *n = root;
	char name[101];
	memset(name, 'n', 100);
	name[100] = '\0';
	size_t len = 0;
	static char big[PATH_MAX + 200];
	while (len + 101 < PATH_MAX) {
		n = add(&t, n, name);
		len += len ? 101 : 100;
	}
	assert_int_equal(nx_node_path(n, big, PATH_MAX), len);
	assert_int_equal(strlen(big), len);
	n = add(&t, n, name);
	len += 101;
	assert_true(len >= PATH_MAX);
	assert_int_equal(nx_node_path(n, big, PATH_MAX), SIZE_MAX);
	assert_int_equal(nx_node_path(n, big, sizeof(big)), len);
	nx_node_free_tree(&t, root, NULL, NULL);
	assert_int_equal(t.t.len, 0);
	nx_paths_free(&t);
}

static void test_join(void **state)
{
	char buf[32];

	(void)state;
	memset(buf, 'Z', sizeof(buf));
	assert_int_equal(nx_join(buf, sizeof(buf), "", 0, "name", 4), 4);
	assert_string_equal(buf, "name");
	assert_int_equal(nx_join(buf, sizeof(buf), "a/b", 3, "cXXX", 1), 5);
	assert_string_equal(buf, "a/b/c");
	/* dir given by length */
	assert_int_equal(nx_join(buf, sizeof(buf), "dir/ignored", 3, "f", 1), 5);
	assert_string_equal(buf, "dir/f");
	/* in place: dir is buf */
	strcpy(buf, "x/y");
	assert_int_equal(nx_join(buf, sizeof(buf), buf, 3, "z", 1), 5);
	assert_string_equal(buf, "x/y/z");
	assert_int_equal(nx_join(buf, sizeof(buf), buf, 5, "w", 1), 7);
	assert_string_equal(buf, "x/y/z/w");
	/* an empty name */
	assert_int_equal(nx_join(buf, sizeof(buf), "", 0, "", 0), 0);
	assert_string_equal(buf, "");
	/* boundaries: "abc/de" is 6 bytes, so it needs 7 */
	memset(buf, 'Z', sizeof(buf));
	assert_int_equal(nx_join(buf, 7, "abc", 3, "de", 2), 6);
	assert_string_equal(buf, "abc/de");
	assert_int_equal(buf[7], 'Z');
	for (size_t size = 0; size < 7; size++) {
		memset(buf, 'Z', sizeof(buf));
		assert_int_equal(nx_join(buf, size, "abc", 3, "de", 2), SIZE_MAX);
		for (size_t i = size; i < sizeof(buf); i++)
			assert_int_equal(buf[i], 'Z');
	}
	memset(buf, 'Z', sizeof(buf));
	assert_int_equal(nx_join(buf, 4, "", 0, "abcd", 4), SIZE_MAX);
	assert_int_equal(nx_join(buf, 5, "", 0, "abcd", 4), 4);
	assert_string_equal(buf, "abcd");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_root),
		cmocka_unit_test(test_add_find),
		cmocka_unit_test(test_many_siblings),
		cmocka_unit_test(test_same_name_chain),
		cmocka_unit_test(test_exchange),
		cmocka_unit_test(test_rename),
		cmocka_unit_test(test_rename_name_storage),
		cmocka_unit_test(test_subs),
		cmocka_unit_test(test_rename_deep),
		cmocka_unit_test(test_unlink),
		cmocka_unit_test(test_free_tree_order),
		cmocka_unit_test(test_foreach),
		cmocka_unit_test(test_deep_chain),
		cmocka_unit_test(test_node_path_limits),
		cmocka_unit_test(test_join),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
