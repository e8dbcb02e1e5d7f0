/*
 * The diff of two snapshots (no system call; see snapshot.h).
 *
 * It works on the old trees as a "view" of what the application has
 * been told.  First it finds, by identity, the entries that went from one
 * place to another and applies those moves to the view, reporting each
 * (RENAME, EXCHANGE, MOVED_OUT/MOVED_IN), parents first so that a moved
 * directory carries its entries along.  A move that cannot be applied in
 * some order (its target's directory is not there, a cycle across watches)
 * is left to the second step, which compares the view with the new tree
 * name by name and reports what differs as DELETE, CREATE, MODIFY and
 * ATTRIB.  Every event is reported against the view as it is at that
 * moment, so a mirror that applies them one by one ends equal to the tree.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "notifyx.h"
#include "nx.h"
#include "scan.h"
#include "snapnode.h"
#include "snapshot.h"
#include "treepath.h"

/* ---- the diff ---- */

/* Scratch states.  View (old) nodes: unchanged, gone (no longer at their
 * place), pending (the source of a move not applied yet), dropped (replaced
 * in the view, waiting to be freed).  New nodes: arrival (nothing came from
 * elsewhere), pending (the target of a move), done, made (created in the
 * view to make room for a move into it), kept (taken over from the old
 * tree by nx_snap_take: nothing to compare). */
enum { S_NONE, S_GONE, S_PENDING, S_DROPPED, S_ARRIVAL, S_DONE, S_MADE, S_KEPT };

/* What MODIFY and ATTRIB are told from: o the old attributes, n the new.
 * A directory's size and times change with its entries: not reported. */
static bool modified(const struct nx_sattr *o, const struct nx_sattr *n)
{
	return !S_ISDIR(n->mode) && (o->size != n->size || o->mtime != n->mtime);
}

static bool attrib(const struct nx_sattr *o, const struct nx_sattr *n)
{
	return (o->mode & 07777) != (n->mode & 07777) || o->uid != n->uid || o->gid != n->gid;
}

/* ---- taking unchanged files over (see snapshot.h) ---- */

struct nx_staken {
	struct nx_snode *dir; /* of old */
	uint32_t i;           /* the index in dir's kids of the node taken */
};

/* The directory of old at cur_dir's place, if it is the same directory all
 * the way up, listed. */
static struct nx_snode *old_match(struct nx_stake *t, const struct nx_snode *cur_dir)
{
	struct nx_snode *p, *o;

	if (!cur_dir->parent)
		return t->old;
	if (!(p = old_match(t, cur_dir->parent)))
		return NULL;
	o = nx_snap_find(p, cur_dir->name, cur_dir->name_len);
	return o && o->entered && nx_sattr_same_id(&o->a, &cur_dir->a) ? o : NULL;
}

/* The index of name in dir, which nx_snode_pos would find, looked for
 * first next to the last one found: a listing in name order, or in its
 * reverse (tmpfs lists the newest first), then finds it with one
 * comparison. */
static bool old_pos(struct nx_stake *t, const struct nx_snode *dir, const char *name, size_t len,
		    uint32_t *i)
{
	bool found;

	for (uint32_t h = t->hint ? t->hint - 1 : 0; h <= t->hint + 1 && h < dir->nkids; h++) {
		const struct nx_snode *k = dir->kids[h];
		if (k->name_len == len && !memcmp(k->name, name, len)) {
			*i = t->hint = h;
			return true;
		}
	}
	*i = nx_snode_pos(dir, name, len, &found);
	if (found)
		t->hint = *i;
	return found;
}

struct nx_snode *nx_snode_take(struct nx_stake *t, struct nx_snode *cur_dir, const char *name,
			       size_t len, const struct nx_sattr *a)
{
	struct nx_snode *od, *o;
	uint32_t i;

	if (!t->old || S_ISDIR(a->mode))
		return NULL;
	if (t->cur_dir != cur_dir) { /* a listing's entries come a directory at a time */
		t->cur_dir = cur_dir;
		t->old_dir = old_match(t, cur_dir);
		t->hint = 0;
	}
	if (!(od = t->old_dir) || !old_pos(t, od, name, len, &i))
		return NULL;
	o = od->kids[i];
	/* (A node taken already has another parent.) */
	if (o->parent != od || !nx_sattr_same_id(&o->a, a) || modified(&o->a, a) ||
	    attrib(&o->a, a))
		return NULL;
	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 256;
		struct nx_staken *v = realloc(t->v, cap * sizeof(*v));
		if (!v)
			return NULL;
		t->v = v;
		t->cap = cap;
	}
	t->v[t->n++] = (struct nx_staken){ od, i };
	o->parent = cur_dir;
	o->a = *a; /* the same for the diff; the change time may not be */
	o->state = S_KEPT;
	return o;
}

/* Undoes the last take (of o, not put in a directory). */
static void untake(struct nx_stake *t, struct nx_snode *o)
{
	struct nx_staken *k = &t->v[--t->n];

	o->parent = k->dir;
	o->state = S_NONE;
}

struct nx_snode *nx_snap_take(struct nx_stake *t, struct nx_snode *cur_dir, const char *name,
			      size_t len, const struct nx_sattr *a)
{
	struct nx_snode *o = nx_snode_take(t, cur_dir, name, len, a);

	if (o && nx_snode_insert(cur_dir, o) < 0) {
		untake(t, o);
		return NULL;
	}
	return o;
}

void nx_snap_give_back(struct nx_stake *t)
{
	while (t->n) {
		struct nx_staken *k = &t->v[t->n - 1];
		struct nx_snode *o = k->dir->kids[k->i], *cur = o->parent, *c;
		bool found;
		uint32_t i = nx_snode_pos(cur, o->name, o->name_len, &found);

		/* (A reader's listing is sorted only once it is whole.) */
		if (i >= cur->nkids || cur->kids[i] != o)
			for (i = 0; i < cur->nkids && cur->kids[i] != o; i++)
				;
		if (i < cur->nkids && (c = nx_snode_new(o->name, o->name_len))) {
			c->a = o->a;
			c->parent = cur;
			cur->kids[i] = c;
		} else if (i < cur->nkids) {
			memmove(cur->kids + i, cur->kids + i + 1,
				(cur->nkids - i - 1) * sizeof(*cur->kids));
			cur->nkids--;
			t->lost = true;
		}
		untake(t, o);
	}
	t->old = NULL;
}

void nx_snap_take_end(struct nx_stake *t)
{
	for (size_t j = 0; j < t->n; j++)
		t->v[j].dir->kids[t->v[j].i] = NULL;
	/* A directory's places come in a row (a listing's): each row closes
	 * the gaps once. */
	for (size_t j = 0; j < t->n; j++) {
		struct nx_snode *dir = t->v[j].dir;
		uint32_t n = 0;
		if (j + 1 < t->n && t->v[j + 1].dir == dir)
			continue;
		for (uint32_t i = 0; i < dir->nkids; i++)
			if (dir->kids[i])
				dir->kids[n++] = dir->kids[i];
		dir->nkids = n;
	}
	free(t->v);
	memset(t, 0, sizeof(*t));
}

struct diff {
	struct nx_sdiff_watch *w;
	size_t n;
	uint32_t *cookie;
	nx_semit_fn emit;
	void *ctx;
	struct nx_map ids;       /* identity -> chain (hnext) of gone view nodes */
	struct nx_snode **arr;   /* arrivals, parents first */
	size_t narr, carr;
	struct nx_snode *trash;  /* dropped subtrees, chained by hnext */
	bool oom;                /* an arrival could not be recorded */
	char p[2][PATH_MAX]; /* paths that fit in an event */
};

static uint64_t id_key(const struct nx_sattr *a)
{
	uint64_t k[2] = { a->dev, a->ino };

	return nx_hash(k, sizeof(k), 0x5eed);
}


static bool same_name(const struct nx_snode *a, const struct nx_snode *b)
{
	return a->name_len == b->name_len && !memcmp(a->name, b->name, a->name_len);
}

static uint32_t widx(const struct nx_snode *n)
{
	while (n->parent)
		n = n->parent;
	return n->widx;
}

static bool within(const struct nx_snode *n, const struct nx_snode *a)
{
	for (; n; n = n->parent)
		if (n == a)
			return true;
	return false;
}

/* The path of n below its root; SIZE_MAX when it does not fit. */
static size_t path_of(const struct nx_snode *n, char *buf, size_t size)
{
	size_t len = 0, pos;

	for (const struct nx_snode *m = n; m->parent; m = m->parent)
		len += m->name_len + (len ? 1 : 0);
	if (len >= size)
		return SIZE_MAX;
	buf[len] = '\0';
	pos = len;
	for (const struct nx_snode *m = n; m->parent; m = m->parent) {
		pos -= m->name_len;
		memcpy(buf + pos, m->name, m->name_len);
		if (pos)
			buf[--pos] = '/';
	}
	return len;
}

static uint32_t dirflag(const struct nx_snode *n)
{
	return nx_snode_isdir(n) ? NOTIFYX_EVENT_ISDIR : 0;
}

/* ---- finding what left its place and what arrived ---- */

static void gone_tree(struct diff *d, struct nx_snode *v)
{
	uint64_t key = id_key(&v->a);

	v->state = S_GONE;
	v->hnext = nx_map_get(&d->ids, key);
	if (nx_map_put(&d->ids, key, v) < 0)
		v->hnext = NULL; /* out of memory: it cannot be matched, a DELETE tells */
	for (uint32_t i = 0; i < v->nkids; i++)
		gone_tree(d, v->kids[i]);
}

static void arrival_tree(struct diff *d, struct nx_snode *c)
{
	if (d->narr == d->carr) {
		size_t cap = d->carr ? 2 * d->carr : 64;
		struct nx_snode **a = realloc(d->arr, cap * sizeof(*a));
		if (!a) {
			/* Out of memory: what the diff reports is incomplete. */
			d->oom = true;
			return;
		}
		d->arr = a;
		d->carr = cap;
	}
	c->state = S_ARRIVAL;
	d->arr[d->narr++] = c;
	for (uint32_t i = 0; i < c->nkids; i++)
		arrival_tree(d, c->kids[i]);
}

/* The directory at this name is another filesystem's root now, or was: a
 * mount or unmount, not a change the application made.  What vanished with
 * (or under) a filesystem is not listed: the watch gets an OVERFLOW. */
static bool remounted(const struct nx_snode *v, const struct nx_snode *c)
{
	return nx_snode_isdir(v) && nx_snode_isdir(c) && !nx_sattr_same_id(&v->a, &c->a) &&
	       (v->a.dev != v->parent->a.dev || c->a.dev != c->parent->a.dev);
}

static void collect(struct diff *d, struct nx_snode *v, struct nx_snode *c)
{
	uint32_t i = 0, j = 0;

	if (!v->entered && c->entered) { /* listed for the first time */
		for (; j < c->nkids; j++)
			arrival_tree(d, c->kids[j]);
		return;
	}
	if (!v->entered || !c->entered)
		return;
	while (i < v->nkids || j < c->nkids) {
		struct nx_snode *x = i < v->nkids ? v->kids[i] : NULL;
		struct nx_snode *y = j < c->nkids ? c->kids[j] : NULL;
		int cmp;

		if (y && y->state == S_KEPT) { /* (its name is not in v any more) */
			j++;
			continue;
		}
		cmp = !x ? 1 : !y ? -1 : nx_snode_cmp_name(x->name, x->name_len, y->name, y->name_len);
		if (cmp < 0) {
			gone_tree(d, x);
			i++;
		} else if (cmp > 0) {
			arrival_tree(d, y);
			j++;
		} else {
			if (nx_sattr_same_id(&x->a, &y->a)) {
				if (nx_snode_isdir(y))
					collect(d, x, y);
			} else if (!remounted(x, y)) {
				gone_tree(d, x);
				arrival_tree(d, y);
			}
			i++;
			j++;
		}
	}
}

/* Pairs arrivals with gone entries of the same identity: within one watch
 * first (RENAME), then across watches (MOVED_OUT/MOVED_IN). */
static void match(struct diff *d, bool same_watch)
{
	for (size_t i = 0; i < d->narr; i++) {
		struct nx_snode *c = d->arr[i], *g;
		uint32_t cw;

		if (c->pair)
			continue;
		cw = widx(c);
		for (g = nx_map_get(&d->ids, id_key(&c->a)); g; g = g->hnext) {
			if (g->pair || !nx_sattr_same_id(&g->a, &c->a) || (widx(g) == cw) != same_watch)
				continue;
			g->pair = c;
			c->pair = g;
			g->state = c->state = S_PENDING;
			break;
		}
	}
}

/* ---- applying moves to the view ---- */

/* The view node at the place of the new node c, if it is the same file. */
static struct nx_snode *view_at(struct diff *d, const struct nx_snode *c)
{
	struct nx_snode *p, *v;

	if (!c->parent)
		return d->w[c->widx].old;
	if (!(p = view_at(d, c->parent)))
		return NULL;
	v = nx_snap_find(p, c->name, c->name_len);
	return v && nx_sattr_same_id(&v->a, &c->a) ? v : NULL;
}

static bool has_pending(const struct nx_snode *n)
{
	if (n->state == S_PENDING)
		return true;
	for (uint32_t i = 0; i < n->nkids; i++)
		if (has_pending(n->kids[i]))
			return true;
	return false;
}

static void mark_dropped(struct nx_snode *n)
{
	n->state = S_DROPPED;
	for (uint32_t i = 0; i < n->nkids; i++)
		mark_dropped(n->kids[i]);
}

/* Takes n out of the view (a rename replaced it); freed at the end. */
static void drop(struct diff *d, struct nx_snode *n)
{
	nx_snode_detach(n);
	mark_dropped(n);
	n->hnext = d->trash;
	d->trash = n;
}

static void drop_kids(struct diff *d, struct nx_snode *n)
{
	while (n->nkids)
		drop(d, n->kids[n->nkids - 1]);
}

static char *dup_name(const struct nx_snode *n)
{
	char *s = malloc(n->name_len + 1);

	if (s)
		memcpy(s, n->name, n->name_len + 1);
	return s;
}

static void give_name(struct nx_snode *n, char *name, size_t len)
{
	if (n->name_alloc)
		free(n->name);
	n->name = name;
	n->name_len = (uint32_t)len;
	n->name_alloc = true;
}

static void settle(struct nx_snode *g, struct nx_snode *c, bool moved)
{
	g->state = moved ? S_NONE : (g->state == S_DROPPED ? S_DROPPED : S_GONE);
	c->state = S_DONE;
}

/* A directory that arrived (no move brought it) holds the target of a move:
 * it is created in the view first, empty, so the move can go into it. */
static int materialize(struct diff *d, struct nx_snode *t)
{
	struct nx_snode *p, *n;
	size_t len;

	if (t->state != S_ARRIVAL || !t->parent)
		return 0;
	if (!(p = view_at(d, t->parent)))
		return materialize(d, t->parent);
	if (nx_snap_find(p, t->name, t->name_len) || nx_snode_reserve(p, 1) < 0 ||
	    !(n = nx_snode_new(t->name, t->name_len)))
		return 0; /* the name is taken (or no memory): the move waits, or is a CREATE */
	n->a = t->a;
	n->entered = t->entered;
	nx_snode_insert(p, n);
	t->state = S_MADE;
	len = path_of(n, d->p[0], sizeof(d->p[0]));
	if (len != SIZE_MAX)
		d->emit(d->ctx, widx(p), NOTIFYX_CREATE, NOTIFYX_EVENT_ISDIR, 0, d->p[0], len, NULL, 0);
	return 1;
}

/* Swaps the places of g and o in the view: one RENAME with EXCHANGE. */
static int swap(struct diff *d, struct nx_snode *g, struct nx_snode *o)
{
	struct nx_snode *gp = g->parent, *op = o->parent;
	uint32_t glen = g->name_len, olen = o->name_len;
	char *gname, *oname;
	size_t lo, lg;

	lg = path_of(g, d->p[1], sizeof(d->p[1]));
	lo = path_of(o, d->p[0], sizeof(d->p[0]));
	if (lg == SIZE_MAX || lo == SIZE_MAX || !(gname = dup_name(g)))
		return 0;
	if (!(oname = dup_name(o))) {
		free(gname);
		return 0;
	}
	nx_snode_detach(g);
	nx_snode_detach(o);
	give_name(g, oname, olen);
	give_name(o, gname, glen);
	/* Two slots were freed: these cannot fail. */
	nx_snode_insert(op, g);
	nx_snode_insert(gp, o);
	d->emit(d->ctx, widx(g), NOTIFYX_RENAME, NOTIFYX_EVENT_EXCHANGE | dirflag(g), 0, d->p[0], lo,
		d->p[1], lg);
	return 1;
}

static void delete_kids(struct diff *d, uint32_t wi, const struct nx_snode *v, size_t len);

/* Applies the move that brings c->pair to the place of c.  Returns 1 when it
 * was settled (applied, found done, or given up), 0 when it must wait. */
static int try_move(struct diff *d, struct nx_snode *c)
{
	struct nx_snode *g = c->pair, *p, *o;
	uint32_t cw = widx(c), gw;
	size_t lold, lnew;
	char *name;

	if (g->state == S_DROPPED) {
		settle(g, c, false);
		return 1;
	}
	if (!(p = view_at(d, c->parent)))
		return materialize(d, c->parent);
	if (g->parent == p && same_name(g, c)) { /* it came along with its directory */
		settle(g, c, true);
		return 1;
	}
	if (within(p, g)) { /* not a move a filesystem can make: left to CREATE/DELETE */
		settle(g, c, false);
		return 1;
	}
	gw = widx(g);
	o = nx_snap_find(p, c->name, c->name_len);
	if (o && o->state == S_PENDING) {
		struct nx_snode *oc = o->pair;
		/* Each goes where the other was: an exchange. */
		if (gw != cw || widx(oc) != cw || !same_name(oc, g) || within(g->parent, o) ||
		    view_at(d, oc->parent) != g->parent || !swap(d, g, o))
			return 0; /* o leaves first (or never: then this is a CREATE) */
		settle(g, c, true);
		settle(o, oc, true);
		return 1;
	}
	if (o && has_pending(o))
		return 0;
	lold = path_of(g, d->p[1], sizeof(d->p[1]));
	if (lold == SIZE_MAX || nx_snode_reserve(p, 1) < 0 || !(name = dup_name(c))) {
		settle(g, c, false);
		return 1;
	}
	if (o && gw != cw && nx_snode_isdir(o) && nx_snode_isdir(g)) {
		/* A directory that arrives by MOVED_IN where one was: a mirror
		 * keeps what the old one held, so that goes first. */
		size_t l = path_of(o, d->p[0], sizeof(d->p[0]));
		if (l != SIZE_MAX)
			delete_kids(d, cw, o, l);
	}
	if (o)
		drop(d, o); /* replaced: only the arrival is reported */
	nx_snode_detach(g);
	give_name(g, name, c->name_len);
	nx_snode_insert(p, g);
	lnew = path_of(g, d->p[0], sizeof(d->p[0]));
	if (gw == cw) {
		d->emit(d->ctx, cw, NOTIFYX_RENAME, dirflag(g), 0, d->p[0], lnew, d->p[1], lold);
	} else {
		uint32_t cookie = ++*d->cookie;
		if (!cookie)
			cookie = ++*d->cookie;
		d->emit(d->ctx, gw, NOTIFYX_MOVED_OUT, dirflag(g), cookie, d->p[1], lold, NULL, 0);
		d->emit(d->ctx, cw, NOTIFYX_MOVED_IN, dirflag(g), cookie, d->p[0], lnew, NULL, 0);
		/* What it holds is implied, unless the watch lists what moves in,
		 * or does not look below its first level. */
		if (!(d->w[cw].flags & NX_SDIFF_RECURSIVE) || (d->w[cw].flags & NX_SDIFF_LIST)) {
			drop_kids(d, g);
			g->entered = c->entered;
		}
	}
	settle(g, c, true);
	return 1;
}

/* The move to c waits for the entry at c's place, which moves elsewhere in
 * the same watch: exchanging the two puts the first in place, and the
 * second, now at the first's old place, still has its own move to make. */
static int break_cycle(struct diff *d, struct nx_snode *c)
{
	struct nx_snode *g = c->pair, *p, *o;
	uint32_t cw = widx(c);

	if (g->state != S_PENDING || !(p = view_at(d, c->parent)) || widx(g) != cw ||
	    !(o = nx_snap_find(p, c->name, c->name_len)) || o->state != S_PENDING ||
	    widx(o->pair) != cw || within(p, g) || within(g->parent, o) || !swap(d, g, o))
		return 0;
	settle(g, c, true);
	return 1;
}

/* ---- what is left: name by name ---- */

static void emit1(struct diff *d, uint32_t wi, uint32_t mask, uint32_t flags, const char *path,
		  size_t len)
{
	d->emit(d->ctx, wi, mask, flags, 0, path, len, NULL, 0);
}

static void attrs(struct diff *d, uint32_t wi, const struct nx_snode *v, const struct nx_snode *c,
		  size_t len)
{
	if (modified(&v->a, &c->a))
		emit1(d, wi, NOTIFYX_MODIFY, 0, d->p[0], len);
	if (attrib(&v->a, &c->a))
		emit1(d, wi, NOTIFYX_ATTRIB, dirflag(c), d->p[0], len);
}

/* Appends name to the path in d->p[0] of length len; SIZE_MAX if too long. */
static size_t push_name(struct diff *d, size_t len, const struct nx_snode *n)
{
	size_t add = n->name_len + (len ? 1 : 0);

	if (len + add >= sizeof(d->p[0]))
		return SIZE_MAX;
	if (len)
		d->p[0][len] = '/';
	memcpy(d->p[0] + len + (len ? 1 : 0), n->name, n->name_len);
	d->p[0][len + add] = '\0';
	return len + add;
}

static void delete_tree(struct diff *d, uint32_t wi, const struct nx_snode *v, size_t len)
{
	delete_kids(d, wi, v, len);
	emit1(d, wi, NOTIFYX_DELETE, dirflag(v), d->p[0], len);
}

static void delete_kids(struct diff *d, uint32_t wi, const struct nx_snode *v, size_t len)
{
	for (uint32_t i = 0; i < v->nkids; i++) {
		size_t l = push_name(d, len, v->kids[i]);
		if (l != SIZE_MAX)
			delete_tree(d, wi, v->kids[i], l);
		d->p[0][len] = '\0';
	}
}

static void create_tree(struct diff *d, uint32_t wi, const struct nx_snode *c, size_t len)
{
	emit1(d, wi, NOTIFYX_CREATE, dirflag(c), d->p[0], len);
	for (uint32_t i = 0; i < c->nkids; i++) {
		size_t l = push_name(d, len, c->kids[i]);
		if (l != SIZE_MAX)
			create_tree(d, wi, c->kids[i], l);
		d->p[0][len] = '\0';
	}
}

static void clean(struct nx_snode *n)
{
	n->state = S_NONE;
	n->pair = n->hnext = NULL;
	for (uint32_t i = 0; i < n->nkids; i++)
		clean(n->kids[i]);
}

static void plain(struct diff *d, uint32_t wi, struct nx_snode *v, struct nx_snode *c, size_t len)
{
	uint32_t i = 0, j = 0;

	if (v->ref && !c->ref) { /* the backend's hold follows the directory */
		c->ref = v->ref;
		c->ref->node = c;
		v->ref = NULL;
	}

	if (v->entered && !c->entered && nx_snode_isdir(c)) {
		/* It could not be read this time (it was being moved, say): what
		 * was known of it stays known, to be compared next time. */
		c->kids = v->kids;
		c->nkids = v->nkids;
		c->cap = v->cap;
		c->entered = true;
		v->kids = NULL;
		v->nkids = v->cap = 0;
		for (uint32_t k = 0; k < c->nkids; k++) {
			c->kids[k]->parent = c;
			clean(c->kids[k]);
		}
		return;
	}
	if (!v->entered && c->entered) { /* listed for the first time */
		for (; j < c->nkids; j++) {
			size_t l = push_name(d, len, c->kids[j]);
			if (l != SIZE_MAX)
				create_tree(d, wi, c->kids[j], l);
			d->p[0][len] = '\0';
		}
		return;
	}
	if (!v->entered || !c->entered)
		return;
	while (i < v->nkids || j < c->nkids) {
		struct nx_snode *x = i < v->nkids ? v->kids[i] : NULL;
		struct nx_snode *y = j < c->nkids ? c->kids[j] : NULL;
		int cmp;
		size_t l;

		/* The same file, unchanged (most, after a loss of a few
		 * events): nothing to report, no path to make. */
		if (y && y->state == S_KEPT) {
			y->state = S_NONE;
			j++;
			continue;
		}
		cmp = !x ? 1 : !y ? -1 : nx_snode_cmp_name(x->name, x->name_len, y->name, y->name_len);
		if (!cmp && !nx_snode_isdir(y) && nx_sattr_same_id(&x->a, &y->a) &&
		    !modified(&x->a, &y->a) && !attrib(&x->a, &y->a)) {
			i++;
			j++;
			continue;
		}
		l = push_name(d, len, cmp <= 0 ? x : y);
		if (l == SIZE_MAX) {
			/* never read that deep; skip */
		} else if (cmp < 0) {
			delete_tree(d, wi, x, l);
		} else if (cmp > 0) {
			create_tree(d, wi, y, l);
		} else if (nx_sattr_same_id(&x->a, &y->a)) {
			attrs(d, wi, x, y, l);
			plain(d, wi, x, y, l);
		} else if (remounted(x, y)) {
			d->emit(d->ctx, wi, NOTIFYX_OVERFLOW, 0, 0, "", 0, NULL, 0);
		} else {
			/* Replaced: the old directory's entries go, then the arrival. */
			delete_kids(d, wi, x, l);
			create_tree(d, wi, y, l);
		}
		d->p[0][len] = '\0';
		i += cmp <= 0;
		j += cmp >= 0;
	}
}

int nx_snap_diff(struct nx_sdiff_watch *w, size_t n, uint32_t *cookie, nx_semit_fn emit,
		 void *ctx)
{
	struct diff *d = calloc(1, sizeof(*d));
	bool progress, oom;

	if (!d)
		return -1;
	d->w = w;
	d->n = n;
	d->cookie = cookie;
	d->emit = emit;
	d->ctx = ctx;
	for (size_t i = 0; i < n; i++) {
		w[i].old->widx = w[i].cur->widx = (uint32_t)i;
		collect(d, w[i].old, w[i].cur);
	}
	if (d->narr && d->ids.len) {
		match(d, true);
		match(d, false);
		do {
			progress = false;
			for (size_t i = 0; i < d->narr; i++)
				if (d->arr[i]->state == S_PENDING && try_move(d, d->arr[i]))
					progress = true;
			/* Only cycles left (a -> b -> c -> a): one exchange puts one
			 * entry in place and shortens the cycle. */
			for (size_t i = 0; i < d->narr && !progress; i++)
				if (d->arr[i]->state == S_PENDING && break_cycle(d, d->arr[i]))
					progress = true;
		} while (progress);
	}
	for (size_t i = 0; i < n; i++) {
		d->p[0][0] = '\0';
		attrs(d, (uint32_t)i, w[i].old, w[i].cur, 0);
		plain(d, (uint32_t)i, w[i].old, w[i].cur, 0);
	}
	for (size_t i = 0; i < d->narr; i++) {
		d->arr[i]->pair = NULL;
		d->arr[i]->state = S_NONE;
	}
	while (d->trash) {
		struct nx_snode *t = d->trash;
		d->trash = t->hnext;
		nx_snap_free(t);
	}
	nx_map_free(&d->ids);
	free(d->arr);
	oom = d->oom;
	free(d);
	if (oom) {
		errno = ENOMEM;
		return -1;
	}
	return 0;
}
