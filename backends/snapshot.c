/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The snapshot/diff engine: reading trees (getdents64 + statx relative to
 * the directory descriptor) and diffing them (no system call).  See
 * snapshot.h.
 *
 * The diff works on the old trees as a "view" of what the application has
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
#include "snapshot.h"
#include "treepath.h"

/* ---- nodes ---- */

static struct nx_snode *node_new(const char *name, size_t len)
{
	struct nx_snode *n = malloc(sizeof(*n) + len + 1);

	if (!n)
		return NULL;
	memset(n, 0, sizeof(*n));
	n->name = n->name_buf;
	n->name_len = (uint32_t)len;
	memcpy(n->name_buf, name, len);
	n->name_buf[len] = '\0';
	return n;
}

void nx_snap_free(struct nx_snode *n)
{
	if (!n)
		return;
	for (uint32_t i = 0; i < n->nkids; i++)
		nx_snap_free(n->kids[i]);
	free(n->kids);
	if (n->ref)
		n->ref->release(n->ref);
	if (n->name_alloc)
		free(n->name);
	free(n);
}

static int name_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);

	return c ? c : (alen > blen) - (alen < blen);
}

/* Index of name in dir's kids, or of where it would go (*found false). */
static uint32_t kid_pos(const struct nx_snode *dir, const char *name, size_t len, bool *found)
{
	uint32_t lo = 0, hi = dir->nkids;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		const struct nx_snode *k = dir->kids[mid];
		int c = name_cmp(k->name, k->name_len, name, len);
		if (!c) {
			*found = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = false;
	return lo;
}

struct nx_snode *nx_snap_find(const struct nx_snode *dir, const char *name, size_t len)
{
	bool found;
	uint32_t i = kid_pos(dir, name, len, &found);

	return found ? dir->kids[i] : NULL;
}

static int reserve(struct nx_snode *dir, uint32_t more)
{
	if (dir->nkids + more <= dir->cap)
		return 0;
	uint32_t cap = dir->cap ? dir->cap : 8;
	while (cap < dir->nkids + more)
		cap *= 2;
	struct nx_snode **k = realloc(dir->kids, cap * sizeof(*k));
	if (!k)
		return -1;
	dir->kids = k;
	dir->cap = cap;
	return 0;
}

/* Puts n into dir at its sorted place; the name must be free. */
static int insert(struct nx_snode *dir, struct nx_snode *n)
{
	bool found;
	uint32_t i = kid_pos(dir, n->name, n->name_len, &found);

	if (found) {
		errno = EEXIST;
		return -1;
	}
	if (reserve(dir, 1) < 0)
		return -1;
	memmove(dir->kids + i + 1, dir->kids + i, (dir->nkids - i) * sizeof(*dir->kids));
	dir->kids[i] = n;
	dir->nkids++;
	n->parent = dir;
	dir->entered = true;
	return 0;
}

/* Takes n out of its directory (found by pointer: its name may be changing). */
static void detach(struct nx_snode *n)
{
	struct nx_snode *dir = n->parent;

	for (uint32_t i = 0; i < dir->nkids; i++) {
		if (dir->kids[i] == n) {
			memmove(dir->kids + i, dir->kids + i + 1,
				(dir->nkids - i - 1) * sizeof(*dir->kids));
			dir->nkids--;
			break;
		}
	}
	n->parent = NULL;
}

struct nx_snode *nx_snap_add(struct nx_snode *parent, const char *name, size_t len,
			     const struct nx_sattr *a)
{
	struct nx_snode *n = node_new(name, len);

	if (!n)
		return NULL;
	n->a = *a;
	if (parent && insert(parent, n) < 0) {
		int err = errno;
		free(n);
		errno = err;
		return NULL;
	}
	return n;
}

void nx_snap_remove(struct nx_snode *n)
{
	if (n->parent)
		detach(n);
	nx_snap_free(n);
}

int nx_snap_move(struct nx_snode *n, struct nx_snode *dir, const char *name, size_t len)
{
	char *copy;

	if (nx_snap_find(dir, name, len)) {
		errno = EEXIST;
		return -1;
	}
	if (reserve(dir, 1) < 0 || !(copy = malloc(len + 1))) {
		errno = ENOMEM;
		return -1;
	}
	memcpy(copy, name, len);
	copy[len] = '\0';
	if (n->parent)
		detach(n);
	if (n->name_alloc)
		free(n->name);
	n->name = copy;
	n->name_len = (uint32_t)len;
	n->name_alloc = true;
	return insert(dir, n); /* cannot fail: the name is free and room reserved */
}

struct nx_snode *nx_snap_empty(const struct nx_snode *n)
{
	struct nx_snode *e = node_new("", 0);

	if (e) {
		e->a = n->a;
		e->entered = nx_snode_isdir(n);
	}
	return e;
}

/* ---- reading ---- */

struct reader {
	struct nx_sread *r;
	struct nx_snode *dir;       /* being listed */
	const struct nx_snode *prev; /* the same directory in the previous snapshot */
	int dfd;
	char path[PATH_MAX];
	size_t path_len;
};

static int64_t ns(const struct statx_timestamp *t)
{
	return (int64_t)t->tv_sec * 1000000000 + t->tv_nsec;
}

static void fill(struct nx_sattr *a, const struct statx *sx)
{
	a->ino = sx->stx_ino;
	a->dev = ((uint64_t)sx->stx_dev_major << 32) | sx->stx_dev_minor;
	a->size = sx->stx_size;
	a->mtime = ns(&sx->stx_mtime);
	a->ctime = ns(&sx->stx_ctime);
	a->mode = sx->stx_mode;
	a->uid = sx->stx_uid;
	a->gid = sx->stx_gid;
	a->nlink = sx->stx_nlink;
	a->has_id2 = sx->stx_mask & STATX_BTIME;
	a->id2 = a->has_id2 ? (uint64_t)ns(&sx->stx_btime) : 0;
}

/* Where the filesystem has no birth time: the inode generation, which needs
 * a descriptor (so only for regular files and directories).  Returns the
 * system calls it made. */
static unsigned read_generation(int dfd, const char *name, struct nx_sattr *a)
{
	int fd, gen;

	if (!S_ISREG(a->mode) && !S_ISDIR(a->mode))
		return 0;
	fd = openat(dfd, name, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return 1;
	if (ioctl(fd, FS_IOC_GETVERSION, &gen) == 0) {
		a->id2 = (uint32_t)gen;
		a->has_id2 = true;
	}
	close(fd);
	return 3; /* open, ioctl, close */
}

/* An entry seen before under the same name with the same inode and ctime
 * keeps its generation; a reused inode number always comes with a new
 * ctime. */
static void generation(struct reader *rd, const char *name, size_t len, struct nx_sattr *a)
{
	const struct nx_snode *old = rd->prev ? nx_snap_find(rd->prev, name, len) : NULL;

	if (old && old->a.ino == a->ino && old->a.ctime == a->ctime) {
		a->id2 = old->a.id2;
		a->has_id2 = old->a.has_id2;
		return;
	}
	rd->r->syscalls += read_generation(rd->dfd, name, a);
}

int nx_snap_stat(int dirfd, const char *path, struct nx_sattr *a)
{
	struct statx sx;

	if (statx(dirfd, path, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT,
		  STATX_BASIC_STATS | STATX_BTIME, &sx) < 0)
		return -1;
	fill(a, &sx);
	if (!a->has_id2)
		read_generation(dirfd, path, a);
	return 0;
}

/* Notes an error that leaves part of the tree out: the entry name (NULL:
 * the directory being read itself) of the directory being read.  The first
 * one names the place; every one counts in partial_key. */
static void partial(struct reader *rd, int err, const char *name, size_t len)
{
	struct nx_sread *r = rd->r;

	r->partial_key += nx_hash(name ? name : "", name ? len : 0,
				  nx_hash(rd->path, rd->path_len, (uint64_t)err));
	if (r->partial_err)
		return;
	r->partial_err = err;
	if (rd->path_len < sizeof(r->partial_path))
		memcpy(r->partial_path, rd->path, rd->path_len + 1);
	else
		r->partial_path[0] = '\0';
}

static int list_one(void *ctx, const char *name, size_t len, unsigned char type)
{
	struct reader *rd = ctx;
	struct nx_snode *n;
	struct statx sx;

	(void)type;
	if (rd->path_len + 1 + len >= sizeof(rd->path)) {
		/* Its path below the root would not fit in an event: left out,
		 * and an ERROR names this directory, the deepest that fits. */
		partial(rd, ENAMETOOLONG, name, len);
		return 0;
	}
	if (rd->r->skip) {
		/* Excluded: not in the snapshot at all, so that what comes from
		 * or goes to it is an arrival or a departure, as from any
		 * place the watch does not see. */
		size_t save = rd->path_len;
		bool skip;
		if (save)
			rd->path[rd->path_len++] = '/';
		memcpy(rd->path + rd->path_len, name, len + 1);
		rd->path_len += len;
		skip = rd->r->skip(rd->r->ctx, rd->path, name);
		rd->path_len = save;
		rd->path[save] = '\0';
		if (skip)
			return 0;
	}
	rd->r->syscalls++;
	if (statx(rd->dfd, name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT,
		  STATX_BASIC_STATS | STATX_BTIME, &sx) < 0) {
		if (errno == ENOMEM)
			return -1;
		if (errno != ENOENT)
			partial(rd, errno, name, len);
		return 0; /* gone meanwhile, or unreadable: left out */
	}
	if (rd->dir->nkids == rd->dir->cap && reserve(rd->dir, 1) < 0)
		return -1;
	if (!(n = node_new(name, len)))
		return -1;
	fill(&n->a, &sx);
	if (!n->a.has_id2)
		generation(rd, name, len, &n->a);
	n->parent = rd->dir;
	rd->dir->kids[rd->dir->nkids++] = n;
	rd->r->entries++;
	return 0;
}

static int kid_cmp(const void *a, const void *b)
{
	const struct nx_snode *x = *(struct nx_snode *const *)a, *y = *(struct nx_snode *const *)b;

	return name_cmp(x->name, x->name_len, y->name, y->name_len);
}

/* Lists the directory open at dfd into dir, sorted; prev (the same
 * directory in the previous snapshot, or NULL) lends identities.  One that
 * cannot be listed (an I/O error, gone) is kept without a listing; running
 * out of descriptors or memory fails. */
static int list_dir(struct reader *rd, struct nx_snode *dir, int dfd, const struct nx_snode *prev)
{
	unsigned calls = 0;
	int ret;

	rd->dir = dir;
	rd->prev = prev;
	rd->dfd = dfd;
	rd->r->listings++;
	ret = nx_scan_dir(dfd, list_one, rd, &calls);
	rd->r->syscalls += calls;
	if (ret && errno != ENOMEM && errno != EMFILE && errno != ENFILE) {
		if (errno != ENOENT)
			partial(rd, errno, NULL, 0);
		for (uint32_t i = 0; i < dir->nkids; i++)
			nx_snap_free(dir->kids[i]);
		free(dir->kids);
		dir->kids = NULL;
		dir->nkids = dir->cap = 0;
		return 0;
	}
	if (ret)
		return -1;
	dir->entered = true;
	if (dir->nkids > 1)
		qsort(dir->kids, dir->nkids, sizeof(*dir->kids), kid_cmp);
	return 0;
}

/* Appends k's name to the path being read; returns the length to go back to. */
static size_t push(struct reader *rd, const struct nx_snode *k)
{
	size_t save = rd->path_len;

	/* k is in a listing: its path fits (list_one). */
	if (save)
		rd->path[rd->path_len++] = '/';
	memcpy(rd->path + rd->path_len, k->name, k->name_len + 1);
	rd->path_len += k->name_len;
	return save;
}

static void pop(struct reader *rd, size_t save)
{
	rd->path_len = save;
	rd->path[save] = '\0';
}

static bool enters(const struct reader *rd, const struct nx_snode *k, uint64_t root_dev)
{
	return nx_snode_isdir(k) && !(rd->r->xdev && k->a.dev != root_dev);
}

static int read_dir(struct reader *rd, struct nx_snode *dir, int dfd, const struct nx_snode *prev,
		    uint64_t root_dev);
static bool same_id(const struct nx_sattr *a, const struct nx_sattr *b);

/* Reads k (at rd->path), a subdirectory of the directory open at dfd whose
 * previous state is prev (or NULL). */
static int enter(struct reader *rd, int dfd, struct nx_snode *k, const struct nx_snode *prev,
		 uint64_t root_dev)
{
	const struct nx_snode *pk = NULL;
	int fd;

	if (prev && (pk = nx_snap_find(prev, k->name, k->name_len)) && !same_id(&pk->a, &k->a))
		pk = NULL;
	if (pk && pk->ref)
		return read_dir(rd, k, -1, pk, root_dev);
	rd->r->syscalls++;
	fd = openat(dfd, k->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	/* One that vanished or cannot be read stays without a listing;
	 * running out of descriptors or memory fails. */
	if (fd >= 0)
		return read_dir(rd, k, fd, pk, root_dev);
	if (errno == EMFILE || errno == ENFILE || errno == ENOMEM)
		return -1;
	if (errno != ENOENT && errno != ENOTDIR && errno != ELOOP)
		partial(rd, errno, NULL, 0);
	return 0;
}

/* Lists the directory open at dfd into dir, then enters its subdirectories
 * when recursive.  Closes dfd unless on_dir kept it.  With dfd -1, the
 * directory is read through the descriptor prev's ref holds, which the diff
 * then hands to dir: a backend's hold (dnotify's registration) goes on
 * without a gap, and a whole read does not need a second descriptor per
 * directory. */
static int read_dir(struct reader *rd, struct nx_snode *dir, int dfd, const struct nx_snode *prev,
		    uint64_t root_dev)
{
	bool keep = false;
	int ret = 0;

	if (dfd < 0) {
		dfd = prev->ref->fd;
		keep = true;
		rd->r->syscalls++;
		if (lseek(dfd, 0, SEEK_SET) < 0) {
			partial(rd, errno, NULL, 0); /* kept without a listing */
			goto out;
		}
	} else if (rd->r->on_dir) {
		ret = rd->r->on_dir(rd->r->ctx, dir, dfd, rd->path);
		if (ret < 0)
			goto out;
		keep = ret > 0;
	}
	ret = list_dir(rd, dir, dfd, prev);
	for (uint32_t i = 0; !ret && rd->r->recursive && i < dir->nkids; i++) {
		struct nx_snode *k = dir->kids[i];
		size_t save;

		if (!enters(rd, k, root_dev))
			continue;
		save = push(rd, k);
		if ((ret = enter(rd, dfd, k, prev, root_dev)))
			break; /* r->failed_path keeps the directory that failed */
		pop(rd, save);
	}
out:
	if (ret && !rd->r->failed_path[0] && rd->path_len < sizeof(rd->r->failed_path))
		memcpy(rd->r->failed_path, rd->path, rd->path_len + 1);
	if (!keep) {
		int err = errno;
		rd->r->syscalls++;
		close(dfd);
		errno = err;
	}
	return ret ? -1 : 0;
}

static struct reader *reader_new(struct nx_sread *r)
{
	struct reader *rd = malloc(sizeof(*rd));

	if (!rd)
		return NULL;
	rd->r = r;
	r->failed_path[0] = '\0';
	r->partial_err = 0;
	r->partial_key = 0;
	r->partial_path[0] = '\0';
	rd->path[0] = '\0';
	rd->path_len = 0;
	return rd;
}

static struct nx_snode *read_root(int fd, struct nx_sread *r)
{
	struct nx_snode *root;
	struct statx sx;

	r->syscalls++;
	if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS | STATX_BTIME,
		  &sx) < 0)
		return NULL;
	if (!(root = node_new("", 0)))
		return NULL;
	fill(&root->a, &sx);
	return root;
}

struct nx_snode *nx_snap_read(int fd, struct nx_sread *r)
{
	struct reader *rd;
	struct nx_snode *root;
	int err, dfd;

	if (!(root = read_root(fd, r)))
		return NULL;
	if (!nx_snode_isdir(root))
		return root;
	if (!(rd = reader_new(r)))
		goto fail;
	if (r->prev && r->prev->ref && same_id(&r->prev->a, &root->a)) {
		dfd = -1;
	} else {
		dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		r->syscalls++;
		if (dfd < 0) {
			free(rd);
			goto fail;
		}
	}
	if (read_dir(rd, root, dfd, r->prev, root->a.dev) < 0) {
		free(rd);
		goto fail;
	}
	free(rd);
	return root;
fail:
	err = errno;
	nx_snap_free(root);
	errno = err;
	return NULL;
}

void nx_snap_mark(struct nx_snode *n)
{
	n->relist = true;
	for (n = n->parent; n && !n->relist_below; n = n->parent)
		n->relist_below = true;
}

/* Takes back what was read of k: a directory that could not be read whole
 * is kept without a listing. */
static void unread(struct nx_snode *k)
{
	for (uint32_t i = 0; i < k->nkids; i++)
		nx_snap_free(k->kids[i]);
	free(k->kids);
	k->kids = NULL;
	k->nkids = k->cap = 0;
	k->entered = false;
	if (k->ref) {
		k->ref->release(k->ref);
		k->ref = NULL;
	}
}

/* Builds c, the new state of directory o: listed again through its ref when
 * o is marked, else o's entries copied (their attributes too: no system
 * call); then the same for the subdirectories that are marked or hold marked
 * ones.  A directory that is new in a listing is read whole.  Other
 * directories are left without a listing. */
static int relist_dir(struct reader *rd, struct nx_snode *c, const struct nx_snode *o,
		      uint64_t root_dev)
{
	bool listed = o->relist && o->ref;

	if (listed) {
		rd->r->syscalls++;
		if (lseek(o->ref->fd, 0, SEEK_SET) < 0)
			partial(rd, errno, NULL, 0);
		else if (list_dir(rd, c, o->ref->fd, o) < 0)
			return -1;
	} else if (o->entered) {
		if (reserve(c, o->nkids) < 0)
			return -1;
		for (uint32_t i = 0; i < o->nkids; i++) {
			const struct nx_snode *k = o->kids[i];
			struct nx_snode *n = node_new(k->name, k->name_len);
			if (!n)
				return -1;
			n->a = k->a;
			n->parent = c;
			c->kids[c->nkids++] = n;
		}
		c->entered = true;
	}
	for (uint32_t i = 0; rd->r->recursive && i < c->nkids; i++) {
		struct nx_snode *n = c->kids[i];
		const struct nx_snode *k;
		size_t save;
		int ret = 0;

		if (!enters(rd, n, root_dev))
			continue;
		k = nx_snap_find(o, n->name, n->name_len);
		save = push(rd, n);
		if (k && k->entered && same_id(&k->a, &n->a)) {
			if (k->relist || k->relist_below)
				ret = relist_dir(rd, n, k, root_dev);
		} else if (listed && (ret = enter(rd, o->ref->fd, n, o, root_dev)) < 0 &&
			   (errno == EMFILE || errno == ENFILE)) {
			/* Out of descriptors: this directory is not watched (an
			 * ERROR names it), the rest goes on; the next listing of
			 * its parent tries again. */
			int err = errno;
			pop(rd, save);
			push(rd, n);
			partial(rd, err, NULL, 0);
			unread(n);
			ret = 0;
		}
		if (ret < 0)
			return -1;
		pop(rd, save);
	}
	return 0;
}

struct nx_snode *nx_snap_relist(int fd, const struct nx_snode *prev, struct nx_sread *r)
{
	struct reader *rd;
	struct nx_snode *root;
	int err;

	if (!(root = read_root(fd, r)))
		return NULL;
	if (!nx_snode_isdir(root) || !nx_snode_isdir(prev))
		return root;
	if (!(rd = reader_new(r)))
		goto fail;
	if (relist_dir(rd, root, prev, root->a.dev) < 0) {
		free(rd);
		goto fail;
	}
	free(rd);
	return root;
fail:
	err = errno;
	nx_snap_free(root);
	errno = err;
	return NULL;
}

/* ---- the diff ---- */

/* Scratch states.  View (old) nodes: unchanged, gone (no longer at their
 * place), pending (the source of a move not applied yet), dropped (replaced
 * in the view, waiting to be freed).  New nodes: arrival (nothing came from
 * elsewhere), pending (the target of a move), done, made (created in the
 * view to make room for a move into it). */
enum { S_NONE, S_GONE, S_PENDING, S_DROPPED, S_ARRIVAL, S_DONE, S_MADE };

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

/* The same file: inode, device and type, and birth time or generation where
 * both sides know it (an inode number the filesystem reused has another). */
static bool same_id(const struct nx_sattr *a, const struct nx_sattr *b)
{
	return a->ino == b->ino && a->dev == b->dev && (a->mode & S_IFMT) == (b->mode & S_IFMT) &&
	       (!a->has_id2 || !b->has_id2 || a->id2 == b->id2);
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
	return nx_snode_isdir(v) && nx_snode_isdir(c) && !same_id(&v->a, &c->a) &&
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
		int cmp = !x ? 1 : !y ? -1 : name_cmp(x->name, x->name_len, y->name, y->name_len);

		if (cmp < 0) {
			gone_tree(d, x);
			i++;
		} else if (cmp > 0) {
			arrival_tree(d, y);
			j++;
		} else {
			if (same_id(&x->a, &y->a)) {
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
			if (g->pair || !same_id(&g->a, &c->a) || (widx(g) == cw) != same_watch)
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
	return v && same_id(&v->a, &c->a) ? v : NULL;
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
	detach(n);
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
	if (nx_snap_find(p, t->name, t->name_len) || reserve(p, 1) < 0 ||
	    !(n = node_new(t->name, t->name_len)))
		return 0; /* the name is taken (or no memory): the move waits, or is a CREATE */
	n->a = t->a;
	n->entered = t->entered;
	insert(p, n);
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
	detach(g);
	detach(o);
	give_name(g, oname, olen);
	give_name(o, gname, glen);
	/* Two slots were freed: these cannot fail. */
	insert(op, g);
	insert(gp, o);
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
	if (lold == SIZE_MAX || reserve(p, 1) < 0 || !(name = dup_name(c))) {
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
	detach(g);
	give_name(g, name, c->name_len);
	insert(p, g);
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
	const struct nx_sattr *o = &v->a, *n = &c->a;

	/* A directory's size and times change with its entries: not reported. */
	if (!nx_snode_isdir(c) && (o->size != n->size || o->mtime != n->mtime))
		emit1(d, wi, NOTIFYX_MODIFY, 0, d->p[0], len);
	if ((o->mode & 07777) != (n->mode & 07777) || o->uid != n->uid || o->gid != n->gid)
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
		int cmp = !x ? 1 : !y ? -1 : name_cmp(x->name, x->name_len, y->name, y->name_len);
		size_t l = push_name(d, len, cmp <= 0 ? x : y);

		if (l == SIZE_MAX) {
			/* never read that deep; skip */
		} else if (cmp < 0) {
			delete_tree(d, wi, x, l);
		} else if (cmp > 0) {
			create_tree(d, wi, y, l);
		} else if (same_id(&x->a, &y->a)) {
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

/* ---- the watches of a scanning backend ---- */

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
		nx_emit(c->nx, sw->w, NOTIFYX_ERROR, 0, 0, err, r.failed_path,
			strlen(r.failed_path), NULL, 0);
		sw->failed = true;
	} else if (t && r.partial_err) {
		/* Part of the tree could not be read (or its paths would not
		 * fit): said again only when what is left out changed (new
		 * entries left out, say).  What was left out is tried again
		 * when its directory is read again. */
		if (!sw->failed || r.partial_key != sw->err_key)
			nx_emit(c->nx, sw->w, NOTIFYX_ERROR, 0, 0, r.partial_err, r.partial_path,
				strlen(r.partial_path), NULL, 0);
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
	struct scan_ctx c = { .nx = nx, .s = s };
	struct nx_swatch *sw = nx_scanner_find(s, w);

	if (!sw)
		return 0;
	/* The snapshot catches up with the disk (its events are the
	 * repair's to tell), and the repair's model is its listing: the
	 * next scans report from where the repair leaves the application. */
	w->quiet = true;
	sw->dirty = true;
	nx_scanner_run(nx, s, false);
	w->quiet = false;
	if (w->ended || sw->dirty) /* gone, or not read: the core reads */
		return 0;
	return list_snapshot(&c, sw) < 0 ? -1 : 1;
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

/* mountinfo writes space, tab, newline and backslash as \ooo. */
static void unescape(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
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
			unescape(point);
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
	if (n && nx_snap_diff(dw, n, &s->cookie, emit_to, &c) < 0) {
		/* The new snapshots are kept: what changed before them is lost. */
		for (size_t i = 0; i < n; i++)
			nx_lost(nx, c.v[i]->w);
	}
	for (size_t i = 0; i < n; i++) {
		nx_snap_free(dw[i].old);
		c.v[i]->snap = dw[i].cur;
	}
	for (size_t i = 0; i < ngone; i++) {
		nx_emit(nx, gone[i]->w, NOTIFYX_DELETE_SELF,
			NOTIFYX_EVENT_SYNTHETIC | dirflag(gone[i]->snap), 0, 0, "", 0, NULL, 0);
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
