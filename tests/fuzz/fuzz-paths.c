/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The path table (nx_node_*) under arbitrary sequences of add, rename,
 * remove (at once, or unlinked first and freed later as the backend's
 * graveyard does), find, path and foreach, checked after every operation
 * against a naive model: an array of the full paths of the live directories
 * of two watch roots.
 *
 * Only what the backend can ask for is done: a directory is added under a
 * name that is free; a rename stays inside one watch and replaces what held
 * the new name (the backend buries it first), unless that is an ancestor of
 * the renamed directory.  A rename into the renamed directory's own subtree
 * cannot happen on a real filesystem and is never asked of the table: the
 * model skips it (fuzz-pairing feeds such records to the backend).
 */
#include "config.h"

#include <errno.h>

#include "fuzz.h"
#include "nx.h"

#define MAXNODES 96
#define MAXNAME 255

struct mnode {
	struct nx_node *n;
	int root;     /* 0 or 1 */
	char *path;   /* relative to the root; "" for the root */
	bool alive;
};

static struct mnode model[MAXNODES * 4];
static size_t nmodel;
static struct nx_watch watches[2];
static size_t buried; /* nodes below unlinked ones: still in the table until freed */

static void *xmalloc(size_t n)
{
	void *p = malloc(n);
	CHECK(p, "out of memory");
	return p;
}

static char *join(const char *dir, const char *name, size_t len)
{
	size_t dl = strlen(dir);
	char *p = xmalloc(dl + 1 + len + 1);

	if (dl) {
		memcpy(p, dir, dl);
		p[dl++] = '/';
	}
	memcpy(p + dl, name, len);
	p[dl + len] = '\0';
	return p;
}

static size_t live_count(void)
{
	size_t k = 0;

	for (size_t i = 0; i < nmodel; i++)
		k += model[i].alive;
	return k;
}

/* The sel-th live model node (roots included unless !roots), or -1. */
static int pick(uint8_t sel, bool roots)
{
	size_t k = 0, want;

	for (size_t i = 0; i < nmodel; i++)
		k += model[i].alive && (roots || model[i].n->parent);
	if (!k)
		return -1;
	want = sel % k;
	for (size_t i = 0; i < nmodel; i++)
		if (model[i].alive && (roots || model[i].n->parent) && want-- == 0)
			return (int)i;
	return -1;
}

static int find_model(int root, const char *path)
{
	for (size_t i = 0; i < nmodel; i++)
		if (model[i].alive && model[i].root == root && !strcmp(model[i].path, path))
			return (int)i;
	return -1;
}

/* True when path is inside (or is) dir. */
static bool below(const char *path, const char *dir)
{
	size_t dl = strlen(dir);

	if (!dl)
		return true;
	return !strncmp(path, dir, dl) && (path[dl] == '\0' || path[dl] == '/');
}

static void name_from(struct in *in, char *name, size_t *len)
{
	uint8_t l = in_u8(in);

	if (l & 0x80) { /* long names, to reach PATH_MAX */
		*len = 1 + (size_t)(l & 0x7f) * 2;
		if (*len > MAXNAME)
			*len = MAXNAME;
		memset(name, 'a' + (l & 3), *len);
		return;
	}
	*len = 1 + (l & 7);
	for (size_t i = 0; i < *len; i++) {
		uint8_t c = in_u8(in);
		/* a small alphabet, so that names collide; any byte but NUL and '/' */
		name[i] = (c & 0x80) ? (char)(c == 0xff ? 0xfe : c) : "ab.c"[c & 3];
	}
}

static void check_node(size_t i)
{
	const struct mnode *m = &model[i];
	char buf[PATH_MAX];
	size_t len = nx_node_path(m->n, buf, sizeof(buf));
	size_t want = strlen(m->path);

	if (want >= sizeof(buf)) {
		CHECK(len == SIZE_MAX, "path of %zu bytes fit in PATH_MAX", want);
	} else {
		CHECK(len == want && !memcmp(buf, m->path, want + 1), "path \"%s\", want \"%s\"",
		      len == SIZE_MAX ? "(too long)" : buf, m->path);
	}
	CHECK(nx_node_watch(m->n) == &watches[m->root], "node of the wrong watch");
	CHECK(!m->n->dead, "live node marked dead");
	if (!m->n->parent) {
		CHECK(!*m->path, "a root with a path");
		return;
	}
	const char *slash = strrchr(m->path, '/');
	char *dir = slash ? strndup(m->path, (size_t)(slash - m->path)) : strdup("");
	int p = find_model(m->root, dir);
	CHECK(p >= 0 && model[p].n == m->n->parent, "parent of \"%s\" is not \"%s\"", m->path, dir);
	free(dir);
	const char *name = slash ? slash + 1 : m->path;
	CHECK(!strcmp(nx_node_name(m->n), name), "name of \"%s\"", m->path);
}

static void check_all(struct nx_paths *t)
{
	size_t live = 0;

	for (size_t i = 0; i < nmodel; i++) {
		if (!model[i].alive)
			continue;
		live++;
		check_node(i);
		if (model[i].n->parent)
			CHECK(nx_node_find(t, model[i].n->parent, nx_node_name(model[i].n), nx_node_name_len(model[i].n)) ==
				      model[i].n, "find \"%s\"", model[i].path);
	}
	/* The table holds the live non-root nodes, and those below unlinked ones. */
	CHECK(t->t.len <= live - 2 + buried, "table has %zu nodes for %zu",
	      t->t.len, live - 2 + buried);
}

struct visit {
	struct nx_node **seen;
	size_t n, cap;
};

static void visit_fn(void *ctx, struct nx_node *n)
{
	struct visit *v = ctx;

	CHECK(v->n < v->cap, "foreach visits more nodes than the subtree has");
	/* Parents first: the parent of every node but the first was seen. */
	if (v->n) {
		bool found = false;
		for (size_t i = 0; i < v->n && !found; i++)
			found = v->seen[i] == n->parent;
		CHECK(found, "foreach: a node before its parent");
	}
	for (size_t i = 0; i < v->n; i++)
		CHECK(v->seen[i] != n, "foreach visits a node twice");
	v->seen[v->n++] = n;
}

static void check_foreach(int i)
{
	struct visit v = { .cap = MAXNODES * 4 };
	size_t want = 0;

	v.seen = xmalloc(v.cap * sizeof(*v.seen));
	nx_node_foreach(model[i].n, visit_fn, &v);
	for (size_t j = 0; j < nmodel; j++) {
		if (!model[j].alive || model[j].root != model[i].root || !below(model[j].path, model[i].path))
			continue;
		want++;
		bool found = false;
		for (size_t k = 0; k < v.n && !found; k++)
			found = v.seen[k] == model[j].n;
		CHECK(found, "foreach from \"%s\" misses \"%s\"", model[i].path, model[j].path);
	}
	CHECK(v.n == want, "foreach from \"%s\": %zu nodes, want %zu", model[i].path, v.n, want);
	free(v.seen);
}

static struct nx_node *graveyard[MAXNODES * 4];
static size_t ngrave;

static void drop_fn(void *ctx, struct nx_node *n)
{
	size_t *count = ctx;
	(void)n;
	++*count;
}

/* Takes model node i and its subtree out; unlinked now, freed now or later. */
static void remove_tree(struct nx_paths *t, int i, bool later)
{
	size_t want = 0, dropped = 0;
	char *dir = strdup(model[i].path);
	struct nx_node *n = model[i].n;

	for (size_t j = 0; j < nmodel; j++) {
		if (model[j].alive && model[j].root == model[i].root && below(model[j].path, dir)) {
			model[j].alive = false;
			want++;
		}
	}
	free(dir);
	if (later) {
		nx_node_unlink(t, n);
		CHECK(!n->parent, "unlinked node keeps its parent");
		graveyard[ngrave++] = n;
		buried += want - 1;
	} else {
		nx_node_free_tree(t, n, drop_fn, &dropped);
		CHECK(dropped == want, "free_tree dropped %zu nodes, want %zu", dropped, want);
	}
}

static void do_rename(struct nx_paths *t, int i, int p, const char *name, size_t len)
{
	struct mnode *m = &model[i];
	char *to = join(model[p].path, name, len);
	int d = find_model(m->root, to);

	if (model[p].root != m->root || below(model[p].path, m->path) ||
	    (d >= 0 && d != i && below(m->path, model[d].path)) || strlen(to) >= PATH_MAX) {
		free(to); /* cannot happen on a filesystem, or the backend never asks */
		return;
	}
	if (d >= 0 && d != i)
		remove_tree(t, d, true); /* replaced: buried first, as the backend does */
	CHECK(nx_node_rename(t, m->n, model[p].n, name, len) == 0, "rename failed: %d", errno);
	char *from = m->path;
	size_t fl = strlen(from);
	for (size_t j = 0; j < nmodel; j++) {
		if (!model[j].alive || model[j].root != m->root || (int)j == i || !below(model[j].path, from))
			continue;
		char *np = join(to, model[j].path + fl + 1, strlen(model[j].path + fl + 1));
		free(model[j].path);
		model[j].path = np;
	}
	m->path = to;
	free(from);
}

static void check_join(struct in *in)
{
	char dir[64], name[64], buf[64];
	size_t dl = in_u8(in) % 40, nl = in_u8(in) % 40, size = 1 + in_u8(in) % 63;

	memset(dir, 'd', dl);
	memset(name, 'n', nl);
	size_t total = dl ? dl + 1 + nl : nl;
	size_t got = nx_join(buf, size, dir, dl, name, nl);
	if (total >= size) {
		CHECK(got == SIZE_MAX, "join of %zu bytes fit in %zu", total, size);
		return;
	}
	CHECK(got == total && strlen(buf) == total, "join length %zu, want %zu", got, total);
	CHECK(!memcmp(buf, dir, dl) && (!dl || buf[dl] == '/') && !memcmp(buf + (dl ? dl + 1 : 0), name, nl),
	      "join content");
	/* In place, as the backend builds paths. */
	memcpy(buf, dir, dl);
	CHECK(nx_join(buf, size, buf, dl, name, nl) == total, "join in place");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nx_paths t = { { 0 } };
	struct in in = { data, size };
	char name[MAXNAME + 1];
	size_t len;

	nmodel = ngrave = buried = 0;
	for (int r = 0; r < 2; r++) {
		model[nmodel++] = (struct mnode){ nx_node_new_root(&watches[r]), r, strdup(""), true };
		CHECK(model[r].n && !model[r].n->parent && nx_node_name_len(model[r].n) == 0, "new root");
	}
	while (in_more(&in) && nmodel < MAXNODES * 4 - 1) {
		uint8_t op = in_u8(&in);
		int i, p;

		switch (op % 9) {
		case 0: case 1: /* add */
			if ((p = pick(in_u8(&in), true)) < 0 || live_count() >= MAXNODES)
				break;
			name_from(&in, name, &len);
			char *path = join(model[p].path, name, len);
			if (find_model(model[p].root, path) >= 0 || strlen(path) >= PATH_MAX) {
				free(path); /* the backend looks before it adds */
				break;
			}
			struct nx_node *n = nx_node_add(&t, model[p].n, name, len);
			CHECK(n, "add failed: %d", errno);
			model[nmodel++] = (struct mnode){ n, model[p].root, path, true };
			break;
		case 2: case 3: /* rename */
			if ((i = pick(in_u8(&in), false)) < 0 || (p = pick(in_u8(&in), true)) < 0)
				break;
			name_from(&in, name, &len);
			do_rename(&t, i, p, name, len);
			break;
		case 4: /* remove */
			if ((i = pick(in_u8(&in), false)) < 0)
				break;
			remove_tree(&t, i, op & 0x10);
			break;
		case 5: /* find, by any name */
			if ((p = pick(in_u8(&in), true)) < 0)
				break;
			name_from(&in, name, &len);
			char *q = join(model[p].path, name, len);
			int want = find_model(model[p].root, q);
			struct nx_node *got = nx_node_find(&t, model[p].n, name, len);
			CHECK(got == (want >= 0 ? model[want].n : NULL), "find \"%s\"", q);
			free(q);
			break;
		case 6: /* path into a buffer of any size */
			if ((i = pick(in_u8(&in), true)) < 0)
				break;
			size_t bsize = 1 + in_u16(&in) % PATH_MAX;
			char *buf = xmalloc(bsize);
			size_t l = nx_node_path(model[i].n, buf, bsize), wl = strlen(model[i].path);
			CHECK(wl >= bsize ? l == SIZE_MAX : l == wl && !strcmp(buf, model[i].path),
			      "path of \"%s\" in %zu bytes: %zu", model[i].path, bsize, l);
			free(buf);
			break;
		case 7:
			if ((i = pick(in_u8(&in), true)) >= 0)
				check_foreach(i);
			break;
		case 8:
			check_join(&in);
			break;
		}
		if (op & 0x20) { /* the graveyard is emptied */
			for (size_t g = 0; g < ngrave; g++)
				nx_node_free_tree(&t, graveyard[g], NULL, NULL);
			ngrave = buried = 0;
		}
		check_all(&t);
	}
	for (size_t g = 0; g < ngrave; g++)
		nx_node_free_tree(&t, graveyard[g], NULL, NULL);
	nx_node_free_tree(&t, model[0].n, NULL, NULL);
	nx_node_free_tree(&t, model[1].n, NULL, NULL);
	CHECK(t.t.len == 0, "%zu names left in the table", t.t.len);
	nx_paths_free(&t);
	for (size_t i = 0; i < nmodel; i++)
		free(model[i].path);
	return 0;
}
