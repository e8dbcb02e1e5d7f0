/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The snapshot engine: nodes, and reading trees (getdents64 + statx relative
 * to the directory descriptor).  The diff is in snapdiff.c, the scanning
 * backends' watches in scanner.c.  See snapshot.h.
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

/* ---- nodes ---- */

struct nx_snode *nx_snode_new(const char *name, size_t len)
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

uint32_t nx_snode_pos(const struct nx_snode *dir, const char *name, size_t len, bool *found)
{
	uint32_t lo = 0, hi = dir->nkids;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		const struct nx_snode *k = dir->kids[mid];
		int c = nx_snode_cmp_name(k->name, k->name_len, name, len);
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
	uint32_t i = nx_snode_pos(dir, name, len, &found);

	return found ? dir->kids[i] : NULL;
}

int nx_snode_reserve(struct nx_snode *dir, uint32_t more)
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
int nx_snode_insert(struct nx_snode *dir, struct nx_snode *n)
{
	const struct nx_snode *first = dir->nkids ? dir->kids[0] : NULL;
	const struct nx_snode *last = dir->nkids ? dir->kids[dir->nkids - 1] : NULL;
	bool found = false;
	uint32_t i;

	/* Past either end: where a listing in name order, or in its reverse,
	 * puts each entry (tmpfs lists the newest first, and names made in a
	 * row are often in order), found with a comparison or two. */
	if (!last || nx_snode_cmp_name(last->name, last->name_len, n->name, n->name_len) < 0)
		i = dir->nkids;
	else if (nx_snode_cmp_name(n->name, n->name_len, first->name, first->name_len) < 0)
		i = 0;
	else
		i = nx_snode_pos(dir, n->name, n->name_len, &found);
	if (found) {
		errno = EEXIST;
		return -1;
	}
	if (nx_snode_reserve(dir, 1) < 0)
		return -1;
	memmove(dir->kids + i + 1, dir->kids + i, (dir->nkids - i) * sizeof(*dir->kids));
	dir->kids[i] = n;
	dir->nkids++;
	n->parent = dir;
	dir->entered = true;
	return 0;
}

/* Takes n out of its directory (found by pointer: its name may be changing). */
void nx_snode_detach(struct nx_snode *n)
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
	struct nx_snode *n = nx_snode_new(name, len);

	if (!n)
		return NULL;
	n->a = *a;
	if (parent && nx_snode_insert(parent, n) < 0) {
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
		nx_snode_detach(n);
	nx_snap_free(n);
}

int nx_snap_move(struct nx_snode *n, struct nx_snode *dir, const char *name, size_t len)
{
	char *copy;

	if (nx_snap_find(dir, name, len)) {
		errno = EEXIST;
		return -1;
	}
	if (nx_snode_reserve(dir, 1) < 0 || !(copy = malloc(len + 1))) {
		errno = ENOMEM;
		return -1;
	}
	memcpy(copy, name, len);
	copy[len] = '\0';
	if (n->parent)
		nx_snode_detach(n);
	if (n->name_alloc)
		free(n->name);
	n->name = copy;
	n->name_len = (uint32_t)len;
	n->name_alloc = true;
	return nx_snode_insert(dir, n); /* cannot fail: the name is free and room reserved */
}

/* Appends to c (room reserved) a node of k's name and attributes, without
 * what k holds; NULL on ENOMEM. */
static struct nx_snode *copy_entry(struct nx_snode *c, const struct nx_snode *k)
{
	struct nx_snode *n = nx_snode_new(k->name, k->name_len);

	if (!n)
		return NULL;
	n->a = k->a;
	n->parent = c;
	c->kids[c->nkids++] = n;
	return n;
}

struct nx_snode *nx_snap_empty(const struct nx_snode *n)
{
	struct nx_snode *e = nx_snode_new("", 0);

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
	struct nx_stake take;       /* of r->prev's unchanged files */
	char path[PATH_MAX];
	size_t path_len;
};

/* What a snapshot compares, and nothing more: the type and identity (inode,
 * device, birth time; the change time lets an unchanged entry keep its
 * generation), what MODIFY and ATTRIB are told from (size, mtime, mode,
 * owner).  No link count, access time or blocks: a filesystem that has to
 * work for a field (a network one) is spared it. */
#define SNAP_STATX (STATX_TYPE | STATX_MODE | STATX_UID | STATX_GID | STATX_INO | \
		    STATX_SIZE | STATX_MTIME | STATX_CTIME | STATX_BTIME)

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

	/* Synchronised as stat(2) is (not AT_STATX_DONT_SYNC): a network
	 * filesystem answers from its attribute cache while that is fresh
	 * anyway, and a model older than that could miss a change that the
	 * poll backend's scan, which shares it, saw. */
	if (statx(dirfd, path, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT, SNAP_STATX, &sx) < 0)
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
	struct nx_sattr a;
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
	if (statx(rd->dfd, name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT, SNAP_STATX, &sx) < 0) {
		if (errno == ENOMEM)
			return -1;
		if (errno != ENOENT)
			partial(rd, errno, name, len);
		return 0; /* gone meanwhile, or unreadable: left out */
	}
	fill(&a, &sx);
	if (!a.has_id2)
		generation(rd, name, len, &a);
	if (rd->dir->nkids == rd->dir->cap && nx_snode_reserve(rd->dir, 1) < 0)
		return -1;
	if (!(n = nx_snode_take(&rd->take, rd->dir, name, len, &a))) {
		if (!(n = nx_snode_new(name, len)))
			return -1;
		n->a = a;
		n->parent = rd->dir;
	}
	rd->dir->kids[rd->dir->nkids++] = n;
	rd->r->entries++;
	return 0;
}

static int kid_cmp(const void *a, const void *b)
{
	const struct nx_snode *x = *(struct nx_snode *const *)a, *y = *(struct nx_snode *const *)b;

	return nx_snode_cmp_name(x->name, x->name_len, y->name, y->name_len);
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
		nx_snap_give_back(&rd->take); /* (the nodes are freed) */
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

/* Reads k (at rd->path), a subdirectory of the directory open at dfd whose
 * previous state is prev (or NULL). */
static int enter(struct reader *rd, int dfd, struct nx_snode *k, const struct nx_snode *prev,
		 uint64_t root_dev)
{
	const struct nx_snode *pk = NULL;
	int fd;

	if (prev && (pk = nx_snap_find(prev, k->name, k->name_len)) && !nx_sattr_same_id(&pk->a, &k->a))
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
	memset(&rd->take, 0, sizeof(rd->take));
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
	if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, SNAP_STATX, &sx) < 0)
		return NULL;
	if (!(root = nx_snode_new("", 0)))
		return NULL;
	fill(&root->a, &sx);
	return root;
}

/* The start of nx_snap_read and nx_snap_relist: prev (the same directory
 * as root, listed) lends its unchanged files. */
static void take_from(struct reader *rd, struct nx_snode *root, struct nx_snode *prev)
{
	if (prev && prev->entered && nx_sattr_same_id(&prev->a, &root->a))
		rd->take.old = prev;
}

/* The end of nx_snap_read and nx_snap_relist: root, or NULL when what read
 * it returned less than 0 (root freed, errno kept). */
static struct nx_snode *read_end(struct reader *rd, struct nx_snode *root, int ret)
{
	int err = errno;

	if (rd) {
		if (ret >= 0 && rd->take.lost) { /* a file could not be given back */
			err = ENOMEM;
			ret = -1;
		}
		if (ret < 0) /* (root is freed) */
			nx_snap_give_back(&rd->take);
		nx_snap_take_end(&rd->take);
		free(rd);
	}
	if (ret >= 0)
		return root;
	nx_snap_free(root);
	errno = err;
	return NULL;
}

struct nx_snode *nx_snap_read(int fd, struct nx_sread *r)
{
	struct reader *rd;
	struct nx_snode *root;
	int dfd = -1;

	if (!(root = read_root(fd, r)))
		return NULL;
	if (!nx_snode_isdir(root))
		return root;
	if (!(rd = reader_new(r)))
		return read_end(NULL, root, -1);
	take_from(rd, root, r->prev);
	if (!r->prev || !r->prev->ref || !nx_sattr_same_id(&r->prev->a, &root->a)) {
		dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		r->syscalls++;
		if (dfd < 0)
			return read_end(rd, root, -1);
	}
	return read_end(rd, root, read_dir(rd, root, dfd, r->prev, root->a.dev));
}

void nx_snap_mark(struct nx_snode *n)
{
	n->relist = true;
	for (n = n->parent; n && !n->relist_below; n = n->parent)
		n->relist_below = true;
}

/* Takes back what was read of k: a directory that could not be read whole
 * is kept without a listing. */
static void unread(struct reader *rd, struct nx_snode *k)
{
	nx_snap_give_back(&rd->take); /* (the nodes are freed) */
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
		if (nx_snode_reserve(c, o->nkids) < 0)
			return -1;
		for (uint32_t i = 0; i < o->nkids; i++)
			if (!copy_entry(c, o->kids[i]))
				return -1;
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
		if (k && k->entered && nx_sattr_same_id(&k->a, &n->a)) {
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
			unread(rd, n);
			ret = 0;
		}
		if (ret < 0)
			return -1;
		pop(rd, save);
	}
	return 0;
}

struct nx_snode *nx_snap_relist(int fd, struct nx_snode *prev, struct nx_sread *r)
{
	struct reader *rd;
	struct nx_snode *root;

	if (!(root = read_root(fd, r)))
		return NULL;
	if (!nx_snode_isdir(root) || !nx_snode_isdir(prev))
		return root;
	if (!(rd = reader_new(r)))
		return read_end(NULL, root, -1);
	take_from(rd, root, prev);
	return read_end(rd, root, relist_dir(rd, root, prev, root->a.dev));
}
