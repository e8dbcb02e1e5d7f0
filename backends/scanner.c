/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The watches of the scanning backends (poll, dnotify): each watch's root
 * held, its tree read and diffed against what the application was told
 * (snapshot.c, snapdiff.c), its root checked for moves, deletion and
 * unmounting, mounts below it noticed.  See scanner.h.
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
#include "scanner.h"
#include "snapshot.h"
#include "treepath.h"

struct nx_swatch *nx_scanner_find(struct nx_scanner *s, const struct nx_watch *w)
{
	for (struct nx_swatch *sw = s->list; sw; sw = sw->next)
		if (sw->w == w && !sw->dead)
			return sw;
	return NULL;
}

static void free_swatch(struct nx_scanner *s, struct nx_swatch *sw)
{
	if (s->on_free)
		s->on_free(s->ctx, sw);
	if (sw->rootfd >= 0)
		close(sw->rootfd);
	nx_snap_free(sw->snap);
	free(sw);
}

static void reap(struct nx_scanner *s)
{
	for (struct nx_swatch **pp = &s->list; *pp;) {
		struct nx_swatch *sw = *pp;
		if (sw->dead) {
			*pp = sw->next;
			free_swatch(s, sw);
		} else {
			pp = &sw->next;
		}
	}
}

void nx_scanner_free(struct nx_scanner *s)
{
	while (s->list) {
		struct nx_swatch *sw = s->list;
		s->list = sw->next;
		free_swatch(s, sw);
	}
}

void nx_scanner_rm(struct nx_scanner *s, struct nx_watch *w)
{
	struct nx_swatch *sw = nx_scanner_find(s, w);

	if (!sw)
		return;
	sw->dead = true;
	if (!s->busy)
		reap(s);
}

struct scan_ctx {
	struct notifyx *nx;
	struct nx_scanner *s;
	struct nx_swatch *sw;
	struct nx_swatch **v;
};

static bool excluded(void *ctx, const char *path, const char *name)
{
	struct scan_ctx *c = ctx;

	return c->sw->w->nexclude && nx_excluded(c->nx, c->sw->w, path, name);
}

static int read_on_dir(void *ctx, struct nx_snode *n, int fd, const char *path)
{
	struct scan_ctx *c = ctx;

	return c->s->on_dir ? c->s->on_dir(c->s->ctx, n, fd, path) : 0;
}

/* Reads sw's tree again: whole, or (relist) only its marked directories. */
static struct nx_snode *read_tree(struct scan_ctx *c, struct nx_swatch *sw, bool relist)
{
	struct nx_sread r = {
		.recursive = sw->w->flags & NOTIFYX_WATCH_RECURSIVE,
		.xdev = sw->w->flags & NOTIFYX_WATCH_XDEV,
		.skip = excluded,
		.ctx = c,
		.prev = sw->snap,
		.on_dir = c->s->on_dir ? read_on_dir : NULL,
	};
	struct nx_snode *t;
	int err;

	c->sw = sw;
	c->s->reading = sw;
	t = relist ? nx_snap_relist(sw->rootfd, sw->snap, &r) : nx_snap_read(sw->rootfd, &r);
	err = errno;
	c->s->reading = NULL;
	c->s->entries += r.entries;
	c->s->listings += r.listings;
	if (!t && sw->snap && !sw->failed && err != ENOENT) {
		/* Part of the tree cannot be watched (descriptors, memory): said
		 * once, until a read works again. */
		nx_emit(c->nx, sw->w, NOTIFYX_ERROR,
			nx_sread_failed_isdir(&r, sw->snap) ? NOTIFYX_EVENT_ISDIR : 0, 0, err,
			r.failed_path, strlen(r.failed_path), NULL, 0);
		sw->failed = true;
	} else if (t && r.partial_err) {
		/* Part of the tree could not be read (or its paths would not
		 * fit): said again only when what is left out changed (new
		 * entries left out, say).  What was left out is tried again
		 * when its directory is read again. */
		if (!sw->failed || r.partial_key != sw->err_key)
			nx_emit(c->nx, sw->w, NOTIFYX_ERROR, NOTIFYX_EVENT_ISDIR, 0, r.partial_err,
				r.partial_path, strlen(r.partial_path), NULL, 0);
		sw->failed = true;
		sw->err_key = r.partial_key;
	} else if (t && !relist) {
		sw->failed = false;
	}
	errno = err;
	return t;
}

static void emit_to(void *ctx, size_t i, uint32_t mask, uint32_t flags, uint32_t cookie,
		    const char *path, size_t len, const char *old, size_t old_len)
{
	struct scan_ctx *c = ctx;

	nx_emit(c->nx, c->v[i]->w, mask, flags | NOTIFYX_EVENT_SYNTHETIC, cookie, 0, path, len,
		old, old_len);
}

/* Reports what sw's snapshot holds as SYNTHETIC CREATEs (LIST); -1 with
 * errno when nothing could be. */
static int list_snapshot(struct scan_ctx *c, struct nx_swatch *sw)
{
	struct nx_sdiff_watch dw = { .old = nx_snap_empty(sw->snap), .cur = sw->snap };
	int ret = -1, err = ENOMEM;

	c->v = &sw;
	if (dw.old) {
		ret = nx_snap_diff(&dw, 1, &c->s->cookie, emit_to, c);
		err = errno;
		nx_snap_free(dw.old);
	}
	errno = err;
	return ret;
}

int nx_scanner_add(struct notifyx *nx, struct nx_scanner *s, struct nx_watch *w)
{
	struct scan_ctx c = { .nx = nx, .s = s };
	struct nx_swatch *sw = calloc(1, sizeof(*sw));
	int err;

	if (!sw)
		return -1;
	sw->w = w;
	sw->rootfd = open(w->abspath, O_PATH | O_CLOEXEC |
				      (w->flags & NOTIFYX_WATCH_NOFOLLOW ? O_NOFOLLOW : 0));
	if (sw->rootfd < 0)
		goto fail;
	/* Registered before the read, so that on_dir finds it. */
	sw->next = s->list;
	s->list = sw;
	if (!(sw->snap = read_tree(&c, sw, false))) {
		s->list = sw->next;
		goto fail;
	}
	sw->mnt_id = nx_mount_id(sw->rootfd);
	/* Nothing listed: the watch is not added. */
	if ((w->flags & NOTIFYX_WATCH_LIST) && list_snapshot(&c, sw) < 0) {
		s->list = sw->next;
		goto fail;
	}
	return 0;
fail:
	err = errno;
	free_swatch(s, sw);
	errno = err;
	return -1;
}

int nx_scanner_repair(struct notifyx *nx, struct nx_scanner *s, struct nx_watch *w)
{
	struct nx_swatch *sw = nx_scanner_find(s, w);

	if (!sw)
		return 0;
	/* The snapshot catches up with the disk (its events are the
	 * repair's to tell), and the repair's model is its listing: the
	 * next scans report from where the repair leaves the application.
	 * A snapshot whose own diff lost the events holds them already. */
	if (!sw->fresh || sw->losses != w->losses) {
		w->quiet = true;
		sw->dirty = true;
		nx_scanner_run(nx, s, false);
		w->quiet = false;
		if (w->ended || sw->dirty) /* gone, or not read: the core reads */
			return 0;
	}
	sw->fresh = false;
	/* The model is the snapshot as read: listing it would only stat
	 * every entry again. */
	return nx_rescan_adopt(w, sw->snap);
}

/* The mounts of this mount namespace now, sorted by id (the first member:
 * cmp_u64 compares an id with a struct mnt). */
struct mnt {
	uint64_t id;
	char *point; /* unescaped */
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static void mounts_free(struct mnt *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i].point);
	free(v);
}

/* The mount table, sorted by id; NULL (and *n 0) when it cannot be read
 * whole. */
static struct mnt *mounts(size_t *n)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	struct mnt *v = NULL;
	size_t cap = 0;
	char line[4096], point[4096];
	uint64_t id;

	*n = 0;
	if (!f)
		return NULL;
	while (fgets(line, sizeof(line), f)) {
		size_t l = strlen(line);
		if (sscanf(line, "%" SCNu64 " %*u %*s %*s %4095s", &id, point) == 2) {
			if (*n == cap) {
				struct mnt *nv = realloc(v, (cap = cap ? 2 * cap : 64) * sizeof(*v));
				if (!nv)
					goto fail;
				v = nv;
			}
			nx_mountinfo_unescape(point);
			if (!(v[*n].point = strdup(point)))
				goto fail;
			v[(*n)++].id = id;
		}
		/* A line longer than the buffer: skip its rest. */
		while (l && line[l - 1] != '\n' && fgets(line, sizeof(line), f))
			l = strlen(line);
	}
	fclose(f);
	if (v)
		qsort(v, *n, sizeof(*v), cmp_u64);
	return v;
fail:
	/* A partial table would make mounts seem gone: no table, no verdict. */
	fclose(f);
	mounts_free(v, *n);
	*n = 0;
	return NULL;
}

/* A hash of the mounts below sw's root, where the root is now; 0 when that
 * is unknown.  A mount or unmount there raises no signal and no scan finds
 * what it hid: when the hash changes, the tree is read whole again. */
static uint64_t mounts_below(const struct nx_swatch *sw, const struct mnt *m, size_t n)
{
	char link[32], path[PATH_MAX];
	uint64_t h = 1;
	ssize_t len;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", sw->rootfd);
	if ((len = readlink(link, path, sizeof(path) - 1)) <= 0 || path[0] != '/')
		return 0;
	path[len] = '\0';
	if (len == 1)
		len = 0; /* "/": every mount but itself */
	for (size_t i = 0; i < n; i++)
		if (!strncmp(m[i].point, path, (size_t)len) && m[i].point[len] == '/' &&
		    m[i].point[len + 1])
			h = nx_hash(&m[i].id, sizeof(m[i].id), h);
	return h;
}

enum { ROOT_HERE, ROOT_GONE, ROOT_UNMOUNTED };

/* Checks a held root: unmounted, deleted (no link left), or moved. */
static int check_root(struct notifyx *nx, struct nx_swatch *sw, const struct mnt *mnt, size_t nmnt)
{
	struct nx_watch *w = sw->w;
	struct stat st, at;
	bool here;

	if (sw->mnt_id && mnt && !bsearch(&sw->mnt_id, mnt, nmnt, sizeof(*mnt), cmp_u64))
		return ROOT_UNMOUNTED;
	/* fstat of an O_PATH descriptor fails only for want of memory: no
	 * verdict, the next scan checks again. */
	if (fstat(sw->rootfd, &st) < 0)
		return ROOT_HERE;
	if (st.st_nlink == 0)
		return ROOT_GONE;
	here = ((w->flags & NOTIFYX_WATCH_NOFOLLOW) ? lstat(w->abspath, &at) : stat(w->abspath, &at)) == 0 &&
	       at.st_dev == st.st_dev && at.st_ino == st.st_ino;
	if (!here && !sw->away)
		nx_emit(nx, w, NOTIFYX_MOVE_SELF,
			NOTIFYX_EVENT_SYNTHETIC | (S_ISDIR(st.st_mode) ? NOTIFYX_EVENT_ISDIR : 0), 0,
			0, "", 0, NULL, 0);
	sw->away = !here;
	return ROOT_HERE;
}

void nx_scanner_run(struct notifyx *nx, struct nx_scanner *s, bool all)
{
	struct scan_ctx c = { .nx = nx, .s = s };
	struct nx_sdiff_watch *dw;
	size_t n = 0, cap = 0, nmnt = 0;
	struct nx_swatch **gone = NULL;
	size_t ngone = 0;
	struct mnt *mnt;

	for (struct nx_swatch *sw = s->list; sw; sw = sw->next)
		cap++;
	if (!cap)
		return;
	mnt = mounts(&nmnt);
	dw = calloc(cap, sizeof(*dw));
	c.v = calloc(cap, sizeof(*c.v));
	gone = calloc(cap, sizeof(*gone));
	if (!dw || !c.v || !gone) {
		nx_lost_all(nx);
		goto out;
	}
	s->busy = true;
	for (struct nx_swatch *sw = s->list; sw; sw = sw->next) {
		struct nx_snode *t;
		bool relist, whole = all;
		uint64_t h;
		int st;

		if (sw->dead || sw->w->ended)
			continue;
		if (mnt && (h = mounts_below(sw, mnt, nmnt))) {
			whole |= sw->mnt_below && h != sw->mnt_below;
			sw->mnt_below = h;
		}
		st = check_root(nx, sw, mnt, nmnt);
		if (st == ROOT_UNMOUNTED) {
			nx_emit(nx, sw->w, NOTIFYX_UNMOUNT, 0, 0, 0, "", 0, NULL, 0);
			nx_end_watch(nx, sw->w);
			continue;
		}
		relist = st == ROOT_HERE && !whole && !sw->dirty;
		if (relist && !sw->snap->relist && !sw->snap->relist_below)
			continue;
		sw->dirty = false;
		t = st == ROOT_GONE ? nx_snap_empty(sw->snap) : read_tree(&c, sw, relist);
		if (!t) {
			if (errno == ENOMEM)
				nx_lost(nx, sw->w);
			/* Tried again at the next scan, even where (dnotify) no
			 * signal would ask for it. */
			sw->dirty = true;
			continue;
		}
		if (st == ROOT_GONE)
			gone[ngone++] = sw;
		dw[n].old = sw->snap;
		dw[n].cur = t;
		dw[n].flags = (sw->w->flags & NOTIFYX_WATCH_RECURSIVE ? NX_SDIFF_RECURSIVE : 0) |
			      (sw->w->flags & NOTIFYX_WATCH_LIST ? NX_SDIFF_LIST : 0);
		c.v[n++] = sw;
	}
	for (size_t i = 0; i < n; i++) {
		struct nx_watch *w = c.v[i]->w;
		c.v[i]->fresh = !w->repair_due;
		c.v[i]->losses = w->losses;
	}
	if (n && nx_snap_diff(dw, n, &s->cookie, emit_to, &c) < 0) {
		/* The new snapshots are kept: what changed before them is lost. */
		for (size_t i = 0; i < n; i++)
			nx_lost(nx, c.v[i]->w);
	}
	for (size_t i = 0; i < n; i++) {
		struct nx_swatch *sw = c.v[i];
		/* Fresh: events of this diff alone were lost (and nothing since). */
		sw->fresh = sw->fresh && sw->w->losses != sw->losses;
		sw->losses = sw->w->losses;
		nx_snap_free(dw[i].old);
		sw->snap = dw[i].cur;
	}
	for (size_t i = 0; i < ngone; i++) {
		uint32_t isdir = nx_snode_isdir(gone[i]->snap) ? NOTIFYX_EVENT_ISDIR : 0;

		nx_emit(nx, gone[i]->w, NOTIFYX_DELETE_SELF, NOTIFYX_EVENT_SYNTHETIC | isdir, 0, 0,
			"", 0, NULL, 0);
		nx_end_watch(nx, gone[i]->w);
	}
	s->busy = false;
	reap(s);
out:
	mounts_free(mnt, nmnt);
	free(dw);
	free(c.v);
	free(gone);
}
