/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ktree.h"
#include "scan.h"

/* ---- errors ---- */

void nx_kt_error(struct notifyx *nx, struct nx_watch *w, const char *rel, int err)
{
	nx_emit(nx, w, NOTIFYX_ERROR, NOTIFYX_EVENT_ISDIR, 0, err, rel, strlen(rel), NULL, 0);
}

size_t nx_kt_entry_path(char *buf, const struct nx_node *n, const char *name, size_t nlen)
{
	size_t d = nx_node_path(n, buf, PATH_MAX);

	return d == SIZE_MAX ? SIZE_MAX : nx_join(buf, PATH_MAX, buf, d, name, nlen);
}

void nx_kt_too_long(struct notifyx *nx, const struct nx_node *n, char *buf)
{
	if (nx_node_path(n, buf, PATH_MAX) != SIZE_MAX)
		nx_kt_error(nx, nx_node_watch(n), buf, ENAMETOOLONG);
}

/* ---- the graveyard ---- */

struct burial {
	void (*detach)(void *ctx, struct nx_node *n);
	void *ctx;
};

static void bury_one(void *ctx, struct nx_node *n)
{
	struct burial *b = ctx;

	b->detach(b->ctx, n);
	n->dead = true;
}

void nx_kt_bury(struct notifyx *nx, struct nx_node *n,
		void (*detach)(void *ctx, struct nx_node *n), void *ctx, struct nx_node **grave)
{
	struct burial b = { detach, ctx };

	if (!n || n->dead)
		return;
	nx_node_foreach(n, bury_one, &b);
	nx_node_unlink(&nx->paths, n);
	n->next = *grave;
	*grave = n;
}

void nx_kt_free_grave(struct notifyx *nx, struct nx_node **grave)
{
	struct nx_node *n, *next;

	for (n = *grave; n; n = next) {
		next = n->next;
		n->next = NULL;
		nx_node_free_tree(&nx->paths, n, NULL, NULL);
	}
	*grave = NULL;
}

/* ---- counts ---- */

uint64_t nx_kt_key(const void *obj, const char *name, size_t len, int kind)
{
	return nx_hash(name, len, (uint64_t)(uintptr_t)obj * 31 + (uint64_t)kind);
}

void nx_kt_count(struct nx_map *m, uint64_t key, unsigned n)
{
	uintptr_t have = (uintptr_t)nx_map_get(m, key);

	nx_map_put(m, key, (void *)(have + n));
}

bool nx_kt_take(struct nx_map *m, uint64_t key)
{
	uintptr_t have = (uintptr_t)nx_map_get(m, key);

	if (!have)
		return false;
	if (have == 1)
		nx_map_del(m, key);
	else
		nx_map_put(m, key, (void *)(have - 1));
	return true;
}

/* ---- repairs ---- */

/* made_from is this many seconds before a repair began: the slack covers
 * the coarse clock of timestamps and filesystems that keep seconds, or two;
 * one behind by more (a server whose clock is late) costs a duplicate
 * CREATE of an entry made during the repair, as failing to count does. */
#define REPAIR_SLACK_S 5

int64_t nx_kt_repair_from(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ((int64_t)ts.tv_sec - REPAIR_SLACK_S) * 1000000000 + ts.tv_nsec;
}

size_t nx_kt_subscribers(struct notifyx *nx, nx_subs subs,
			 bool (*stale)(const void *ctx, const struct nx_node *s), const void *ctx,
			 struct nx_node ***v, size_t *cap)
{
	struct nx_node *s;
	size_t n = 0;

	for (size_t si = 0; (s = nx_subs_get(subs, si)); si++) {
		if (stale(ctx, s))
			continue;
		if (n == *cap) {
			size_t more = n ? n * 2 : 8;
			struct nx_node **grown = realloc(*v, more * sizeof(*grown));
			if (!grown) { /* the rest miss this event: say so */
				for (; (s = nx_subs_get(subs, si)); si++)
					nx_lost(nx, nx_node_watch(s));
				break;
			}
			*v = grown;
			*cap = more;
		}
		(*v)[n++] = s;
	}
	return n;
}

bool nx_kt_rename_over(const struct notifyx *nx, int dfd, const char *name)
{
	static _Atomic unsigned long looked_up;
	char never[64];
	struct stat st;

	if (name && fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT;
	snprintf(never, sizeof(never), ".notifyx-sync-%ld-%lu", (long)nx->pid, ++looked_up);
	return fstatat(dfd, never, &st, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT;
}

/* ---- listing ---- */

int nx_kt_list_entry(void *ctx, const char *name, size_t len, unsigned char type)
{
	struct nx_kt_list *l = ctx;
	struct nx_watch *w = nx_node_watch(l->dir);
	size_t clen = nx_join(l->scratch, PATH_MAX, l->rel, l->rel_len, name, len);

	if (clen == SIZE_MAX) {
		l->too_long = true;
		return 0;
	}
	if (nx_excluded(l->nx, w, l->scratch, name))
		return 0;
	if (l->report) {
		nx_emit(l->nx, w, NOTIFYX_CREATE,
			NOTIFYX_EVENT_SYNTHETIC | (type == DT_DIR ? NOTIFYX_EVENT_ISDIR : 0), 0, 0,
			l->scratch, clen, NULL, 0);
		if (!l->made_from || !nx_rescan_listed_before(w, l->made_from))
			nx_kt_count(l->reported, nx_kt_key(l->dir, name, len, l->reported_kind), 1);
	}
	if (type == DT_DIR && (l->all_subdirs || (w->flags & NOTIFYX_WATCH_RECURSIVE))) {
		if (l->sub_len + len + 1 > l->sub_cap) {
			size_t cap = (l->sub_cap + len + 1) * 2;
			char *p = realloc(l->subdirs, cap);
			if (!p)
				return -1;
			l->subdirs = p;
			l->sub_cap = cap;
		}
		memcpy(l->subdirs + l->sub_len, name, len + 1);
		l->sub_len += len + 1;
	}
	return 0;
}

/* ---- walking ---- */

bool nx_kt_other_dev(const struct nx_node *n, int fd)
{
	const struct nx_watch *w = nx_node_watch(n);
	struct stat st;

	return n->parent && (w->flags & NOTIFYX_WATCH_XDEV) &&
	       (fstat(fd, &st) < 0 || st.st_dev != w->dev);
}

static bool fatal_error(int err)
{
	return err == ENOSPC || err == ENOMEM || err == EMFILE || err == ENFILE;
}

/* Enters the subdirectories that the listing l of n (open at fd, or -1)
 * found. */
static int walk_below(struct nx_kt_walk *wk, struct nx_node *n, struct nx_kt_list *l, int fd,
		      char *rel, size_t rel_len, int depth)
{
	struct notifyx *nx = wk->nx;
	struct nx_watch *w = nx_node_watch(n);
	bool deep = w->flags & NOTIFYX_WATCH_RECURSIVE;

	for (size_t off = 0; off < l->sub_len && !w->ended && !n->dead;) {
		const char *sub = l->subdirs + off;
		size_t slen = strlen(sub), clen;
		struct nx_node *c;
		int ret;
		off += slen + 1;
		if (!deep) {
			wk->shallow(wk, n, fd, sub, slen);
			continue;
		}
		if (nx_node_find(&nx->paths, n, sub, slen))
			continue;
		if (!(c = nx_node_add(&nx->paths, n, sub, slen)))
			return -1;
		if ((clen = nx_join(rel, PATH_MAX, rel, rel_len, sub, slen)) == SIZE_MAX) {
			nx_kt_error(nx, w, rel, ENAMETOOLONG);
			wk->bury(nx, c);
			continue;
		}
		ret = nx_kt_walk(wk, c, fd, sub, rel, clen, depth + 1);
		rel[rel_len] = '\0';
		if (ret < 0)
			return -1;
	}
	return 0;
}

int nx_kt_walk(struct nx_kt_walk *wk, struct nx_node *n, int pfd, const char *name, char *rel,
	       size_t rel_len, int depth)
{
	struct notifyx *nx = wk->nx;
	struct nx_watch *w = nx_node_watch(n);
	struct nx_kt_list l = { .nx = nx, .dir = n, .rel = rel, .rel_len = rel_len,
				.scratch = wk->scratch, .report = wk->report,
				.reported = wk->reported, .reported_kind = wk->reported_kind,
				.made_from = wk->made_from, .all_subdirs = wk->shallow != NULL };
	unsigned calls = 0;
	int fd, err, ret;

	if (w->ended || n->dead)
		return 0;
	if ((fd = wk->enter(wk, n, pfd, name, rel)) == NX_KT_SKIP)
		return 0;
	if (fd < 0) {
		err = errno;
		if (wk->fatal && (fatal_error(err) || !n->parent)) {
			errno = err;
			return -1;
		}
		/* (quiet() looks at n in the table: before it leaves.) */
		if (err != ENOENT && err != ENOTDIR && err != ELOOP &&
		    !(wk->quiet && wk->quiet(wk, n, err)))
			nx_kt_error(nx, w, rel, err);
		if (n->parent)
			wk->bury(nx, n);
		return 0;
	}
	nx_rescan_listing(w, fd, rel_len);
	ret = nx_scan_dir(fd, nx_kt_list_entry, &l, &calls);
	err = errno;
	nx_rescan_listing(w, -1, 0);
	if (wk->listed)
		wk->listed(wk, n, calls);
	if (ret < 0) {
		close(fd);
		free(l.subdirs);
		if (err == ENOMEM)
			return -1;
		/* ENOENT: removed while being listed; its parent reports that. */
		if (err != ENOENT)
			nx_kt_error(nx, w, rel, err);
		return 0;
	}
	/* What does not fit is not watched: the deepest directory that fits
	 * says so, once (its events name no entry that does not fit either). */
	if (l.too_long)
		nx_kt_error(nx, w, rel, ENAMETOOLONG);
	if (depth >= NX_KT_FD_DEPTH) {
		close(fd);
		fd = -1;
	}
	ret = walk_below(wk, n, &l, fd, rel, rel_len, depth);
	if (fd >= 0)
		close(fd);
	free(l.subdirs);
	return ret;
}

/* ---- moves ---- */

bool nx_within(const struct nx_node *n, const struct nx_node *c)
{
	for (; n; n = n->parent)
		if (n == c)
			return true;
	return false;
}

void nx_treemove(struct notifyx *nx, struct nx_treemove *t,
		 void (*bury)(struct notifyx *nx, struct nx_node *n))
{
	struct nx_watch *w = nx_node_watch(t->a);
	struct nx_node *c = t->isdir ? nx_node_find(&nx->paths, t->a, t->fname, t->flen) : NULL;
	struct nx_node *d = nx_node_find(&nx->paths, t->b, t->tname, t->tlen);

	/* The kernel never moves a directory into itself: a table that says
	 * so is out of step with the filesystem (a listing raced with moves).
	 * It must not be made into a cycle, and what it would report is
	 * wrong: the watch lost track, as when events are lost. */
	if ((c && nx_within(t->b, c)) || (d && t->exchange && nx_within(t->a, d))) {
		bury(nx, c);
		bury(nx, d);
		t->c = t->d = NULL;
		t->lost = true;
		nx_lost(nx, w);
		return;
	}
	if (t->exchange) {
		if (c && nx_node_rename(&nx->paths, c, t->b, t->tname, t->tlen) < 0)
			nx_lost(nx, w);
		if (d && d != c && nx_node_rename(&nx->paths, d, t->a, t->fname, t->flen) < 0)
			nx_lost(nx, w);
	} else {
		if (d && d != c)
			bury(nx, d); /* replaced */
		if (c && t->out) {
			bury(nx, c);
			c = NULL;
		} else if (c && nx_node_rename(&nx->paths, c, t->b, t->tname, t->tlen) < 0) {
			nx_lost(nx, w);
		}
		d = NULL;
	}
	t->c = c;
	t->d = d;
}

/* An exchange of entry name of directory node n with a name the watch does
 * not see: gone, what left it, and came, what arrived, are directories or
 * not.  Nothing of the hidden name was ever in the table. */
static void exchange_unseen(struct nx_kt_rename *r, struct nx_node *n, const char *name,
			    size_t len, bool gone, bool came, bool theirs)
{
	struct notifyx *nx = r->nx;
	struct nx_watch *w = nx_node_watch(n);
	char *path = r->scratch[0];
	size_t plen = nx_kt_entry_path(path, n, name, len);

	if (plen == SIZE_MAX)
		return;
	r->bury(nx, nx_node_find(&nx->paths, n, name, len));
	nx_emit(nx, w, NOTIFYX_MOVED_OUT, gone ? NOTIFYX_EVENT_ISDIR : 0, 0, 0, path, plen, NULL, 0);
	nx_emit(nx, w, NOTIFYX_MOVED_IN, came ? NOTIFYX_EVENT_ISDIR : 0, 0, 0, path, plen, NULL, 0);
	if (came)
		r->arrived(r, n, name, len, theirs, true);
}

void nx_kt_rename(struct nx_kt_rename *r)
{
	struct notifyx *nx = r->nx;
	struct nx_watch *w = nx_node_watch(r->a);
	char *newp = r->scratch[0], *oldp = r->scratch[1];
	size_t olen = nx_kt_entry_path(oldp, r->a, r->fname, r->flen);
	size_t nlen = nx_kt_entry_path(newp, r->b, r->tname, r->tlen);
	uint32_t flags = (r->isdir ? NOTIFYX_EVENT_ISDIR : 0) |
			 (r->exchange ? NOTIFYX_EVENT_EXCHANGE : 0);

	if (olen == SIZE_MAX || nlen == SIZE_MAX) {
		nx_kt_too_long(nx, olen == SIZE_MAX ? r->a : r->b, oldp);
		return;
	}
	bool new_out = nx_excluded(nx, w, newp, newp + nlen - r->tlen);
	if (r->exchange && w->nexclude) {
		bool old_out = nx_excluded(nx, w, oldp, oldp + olen - r->flen);
		if (old_out && new_out)
			return;
		if (new_out) { /* a/fname is seen: what left it moved to tname */
			exchange_unseen(r, r->a, r->fname, r->flen, r->isdir, r->to_isdir, true);
			return;
		}
		if (old_out) {
			exchange_unseen(r, r->b, r->tname, r->tlen, r->to_isdir, r->isdir, false);
			return;
		}
	}
	struct nx_treemove t = {
		.a = r->a, .b = r->b, .fname = r->fname, .flen = r->flen,
		.tname = r->tname, .tlen = r->tlen, .isdir = r->isdir, .exchange = r->exchange,
		.out = new_out,
	};
	nx_treemove(nx, &t, r->bury);
	if (t.lost)
		return;
	nx_emit(nx, w, NOTIFYX_RENAME, flags, 0, 0, newp, nlen, oldp, olen);
	/* A directory the table did not know (excluded before, or not reached
	 * yet when it appeared): what it holds is new to the watch. */
	if (r->isdir && !t.c && !t.out)
		r->arrived(r, r->b, r->tname, r->tlen, false, false);
	if (r->exchange && r->to_isdir && !t.d)
		r->arrived(r, r->a, r->fname, r->flen, true, false);
}
