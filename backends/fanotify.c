/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The fanotify backend.
 *
 * The group reports file identifiers (FAN_REPORT_DFID_NAME, with
 * FAN_REPORT_FID and FAN_REPORT_TARGET_FID where the kernel has them), so no
 * descriptor is ever opened per event.  Each watched directory (and each
 * watched file) gets an inode mark; the kernel object behind a mark is a
 * "kobj", found by the hash of its identifier (fsid + file handle).  As in
 * the inotify backend, the nodes of the path table subscribe to the kobj of
 * their inode, and each event is dispatched to every subscriber.
 *
 * A directory's own events (ATTRIB, OPEN, ...) come with the directory's
 * identifier and the name ".", even when only its parent is marked: so the
 * child directories of every watched directory are nodes too (without a
 * mark when the watch is not recursive), to name them.
 *
 * FAN_RENAME gives both ends of a move in one record, so nothing waits for a
 * second half.  Unread events on one entry are merged by the kernel and lose
 * their order: nx_fan_split() puts them back in an order consistent with the
 * entry's state.
 *
 * fanotify has no unmount event: a private descriptor of /proc/self/mountinfo
 * tells (POLLPRI) when the mount table changed, and then the mount of each
 * kobj is looked for; another one in the handle's epoll set wakes the
 * application.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/fanotify.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "fanotify-int.h"
#include "scan.h"
#include "ktree.h"
#include "treepath.h"

/* Newer than some installed headers (see KERNEL.md). */
#ifndef FAN_REPORT_TARGET_FID
#define FAN_REPORT_TARGET_FID 0x00001000
#endif
#ifndef AT_HANDLE_FID
#define AT_HANDLE_FID 0x200
#endif
#ifndef STATX_MNT_ID
#define STATX_MNT_ID 0x00001000U
#endif

static long default_inode_max(void);

/* ---- identifiers ---- */

/* The identifier of the object open at fd, as fanotify reports it.  ENODEV
 * when the filesystem has no file handles or a zero fsid. */
static int fd_id(int fd, unsigned char *id, size_t *len)
{
	struct {
		struct file_handle fh;
		unsigned char bytes[128];
	} h;
	struct statfs sfs;
	int mnt;

	if (fstatfs(fd, &sfs) < 0)
		return -1;
	h.fh.handle_bytes = sizeof(h.bytes);
	if (name_to_handle_at(fd, "", &h.fh, &mnt, AT_EMPTY_PATH | AT_HANDLE_FID) < 0 &&
	    (errno != EINVAL || (h.fh.handle_bytes = sizeof(h.bytes),
				 name_to_handle_at(fd, "", &h.fh, &mnt, AT_EMPTY_PATH) < 0))) {
		if (errno == EOPNOTSUPP || errno == EOVERFLOW)
			errno = ENODEV;
		return -1;
	}
	if (!sfs.f_fsid.__val[0] && !sfs.f_fsid.__val[1]) {
		errno = ENODEV;
		return -1;
	}
	memcpy(id, &sfs.f_fsid, 8);
	memcpy(id + 8, &h.fh.handle_bytes, 4);
	memcpy(id + 12, &h.fh.handle_type, 4);
	memcpy(id + 16, h.bytes, h.fh.handle_bytes);
	*len = 16 + h.fh.handle_bytes;
	return 0;
}

static struct kobj *kobj_find(const struct fan *fa, const struct fanid *id)
{
	struct kobj *k;

	if (!id->len || !(k = nx_map_get(&fa->kobjs, id->key)))
		return NULL;
	return k->idlen == id->len && !memcmp(k->id, id->data, id->len) ? k : NULL;
}

static void drop_kobj(struct fan *fa, struct kobj *k)
{
	nx_map_del(&fa->kobjs, k->key);
	free(k);
}

static uint64_t mnt_of(int fd)
{
	struct statx stx;

	if (statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &stx) < 0 || !(stx.stx_mask & STATX_MNT_ID))
		return 0;
	return stx.stx_mnt_id;
}

/* ---- marks ---- */

static uint64_t node_mask(const struct nx_node *n, bool isdir)
{
	const struct nx_watch *w = n->watch;
	uint64_t m = nx_fan_mask(w->events);

	if (!isdir)
		return (m & ~(FAN_CREATE | FAN_DELETE | FAN_RENAME)) | FAN_DELETE_SELF;
	/* To keep the tree up to date (not recursive: the names of the child
	 * directories, whose own events come without one). */
	m |= FAN_CREATE | FAN_DELETE | FAN_RENAME;
	if (n->parent) /* a directory's own end is reported by its parent */
		m &= ~(FAN_DELETE_SELF | FAN_MOVE_SELF);
	else /* the watch ends with it; its guard follows it (guard_root) */
		m |= FAN_DELETE_SELF | FAN_MOVE_SELF;
	return m | FAN_ONDIR | FAN_EVENT_ON_CHILD;
}

static void bury(struct notifyx *nx, struct nx_node *n);

/* fanotify_mark() on the object open at fd.  The kernel takes no O_PATH
 * descriptor there, so those are given as their /proc/self/fd link (which
 * leads to the object itself, a symbolic link included). */
static int mark_fd(struct fan *fa, unsigned flags, uint64_t mask, int fd)
{
	char kpath[32];

	if (fanotify_mark(fa->fd, flags, mask, fd, NULL) == 0)
		return 0;
	if (errno != EBADF)
		return -1;
	snprintf(kpath, sizeof(kpath), "/proc/self/fd/%d", fd);
	return fanotify_mark(fa->fd, flags, mask, AT_FDCWD, kpath);
}

/* Subscribes node n to the object open at fd; marks it when mark is true. */
static void detach(struct notifyx *nx, struct nx_node *n);

static int attach(struct notifyx *nx, struct nx_node *n, int fd, bool mark)
{
	struct fan *fa = fan_of(nx);
	unsigned char id[ID_MAX];
	struct fanid fid;
	struct kobj *k;
	struct stat st;
	size_t len;
	bool fresh = false;

	if (fstat(fd, &st) < 0 || fd_id(fd, id, &len) < 0)
		return -1;
	fid.data = id;
	fid.len = len;
	fid.key = nx_fan_key(id, len);
again:
	fresh = false;
	if (!(k = kobj_find(fa, &fid))) {
		if (nx_map_get(&fa->kobjs, fid.key)) {
			errno = ENOSPC; /* a 64-bit hash collision: never seen, but not wrong */
			return -1;
		}
		if (!(k = calloc(1, sizeof(*k))) || nx_map_put(&fa->kobjs, fid.key, k) < 0) {
			free(k);
			errno = ENOMEM;
			return -1;
		}
		k->key = fid.key;
		k->idlen = len;
		memcpy(k->id, id, len);
		k->isdir = S_ISDIR(st.st_mode);
		k->mnt_id = mnt_of(fd);
		fresh = true;
	}
	uint64_t want = mark ? node_mask(n, k->isdir) : 0;
	if (want & ~k->kmask) {
		if (mark_fd(fa, FAN_MARK_ADD, k->kmask | want, fd) < 0) {
			int err = errno;
			if (err == EOPNOTSUPP || err == EXDEV)
				err = ENODEV;
			if (fresh)
				drop_kobj(fa, k);
			errno = err;
			return -1;
		}
		k->kmask |= want;
	}
	if (n->kref == k)
		return 0; /* subscribed already (a listing after a filesystem mark) */
	if (n->kref)
		detach(nx, n);
	/* A directory the watch knows already at another place: the events
	 * read so far lag behind the filesystem; the old place is stale.
	 * Unless that place is above n: a listing made after the directory
	 * moved below itself, as the events read so far have it (ELOOP). */
	for (struct nx_node *s = k->subs; s; s = s->knext) {
		if (s->watch == n->watch && s != n && nx_within(n, s)) {
			errno = ELOOP;
			return -1;
		}
	}
	for (struct nx_node *s = k->subs; s; s = s->knext) {
		if (s->watch == n->watch && !nx_within(n, s) && s->parent) {
			bury(nx, s);
			if (!kobj_find(fa, &fid))
				goto again; /* it was the last node of k, which went with it */
			break;
		}
	}
	n->kref = k;
	n->knext = k->subs;
	k->subs = n;
	return 0;
}

/* Opens node n's directory (name NULL), or its entry name, from the held
 * root of its watch, with open(2) flags; ENAMETOOLONG when its path does
 * not fit. */
static int open_below(struct notifyx *nx, const struct nx_node *n, const char *name,
		      size_t nlen, int flags)
{
	const struct fwatch *fw = n->watch->bdata;
	char *p = fan_of(nx)->path[3];
	size_t rel = 0, dlen, len;

	if (fw->hname) {
		rel = strlen(fw->hname) + 1;
		memcpy(p, fw->hname, rel - 1);
		p[rel - 1] = '/';
	}
	dlen = nx_node_path(n, p + rel, PATH_MAX - rel);
	len = dlen == SIZE_MAX || !name ? dlen : nx_join(p + rel, PATH_MAX - rel, p + rel, dlen,
							 name, nlen);
	if (len == SIZE_MAX)
		return errno = ENAMETOOLONG, -1;
	if (!len && rel) /* the root itself, by its name */
		p[rel - 1] = '\0';
	return nx_open_below(fw->hfd, p, flags);
}

/* Opens node n's object (O_PATH) by its path, making sure it is the same
 * object.  ESTALE when the path leads elsewhere. */
static int open_node(struct notifyx *nx, struct nx_node *n)
{
	struct kobj *k = n->kref;
	unsigned char id[ID_MAX];
	size_t len;
	int fd;

	if (!k) {
		errno = ESTALE;
		return -1;
	}
	if (!n->watch->bdata || ((const struct fwatch *)n->watch->bdata)->hfd < 0)
		fd = open(n->watch->abspath, O_PATH | O_CLOEXEC |
			  ((n->watch->flags & NOTIFYX_WATCH_NOFOLLOW) ? O_NOFOLLOW : 0));
	else
		fd = open_below(nx, n, NULL, 0, O_PATH);
	if (fd < 0)
		return -1;
	if (fd_id(fd, id, &len) < 0) {
		int err = errno;
		close(fd);
		errno = err;
		return -1;
	}
	if (len == k->idlen && !memcmp(id, k->id, len))
		return fd;
	close(fd);
	errno = ESTALE;
	return -1;
}

/* True when the object of key is the parent of a held root, marked for its
 * deletion (see guard_root). */
static bool guarded(const struct notifyx *nx, uint64_t key)
{
	const struct nx_watch *w;
	size_t pos = 0;

	while (nx_map_next(&nx->watches, &pos, NULL, (void **)&w)) {
		const struct fwatch *fw = w->bdata;
		if (fw && fw->hfd >= 0 && fw->guard == key && !w->ended)
			return true;
	}
	return false;
}

/* Removes k's mark from the object open at fd, but for what a guard needs. */
static void unmark(struct notifyx *nx, const struct kobj *k, int fd)
{
	uint64_t keep = guarded(nx, k->key) ? FAN_DELETE | FAN_ONDIR : 0;

	mark_fd(fan_of(nx), FAN_MARK_REMOVE, k->kmask & ~keep, fd);
}

/* Takes n off the nodes of its kobj: returns the kobj when n was its last
 * node (it is then to be dropped), else NULL. */
static struct kobj *unsubscribe(struct nx_node *n)
{
	struct kobj *k = n->kref;

	if (!k)
		return NULL;
	for (struct nx_node **pp = &k->subs; *pp; pp = &(*pp)->knext) {
		if (*pp == n) {
			*pp = n->knext;
			break;
		}
	}
	n->kref = NULL;
	n->knext = NULL;
	return k->subs ? NULL : k;
}

/* The mark of k goes when its last node goes (but for what a guard needs).
 * The kernel needs the object to remove a mark: reached by the node's path,
 * checked by its identifier.  When the object cannot be reached any more
 * (moved away, or deleted, which removes the mark itself), the mark stays
 * until the inode goes; its events then match no kobj and are dropped. */
static void detach(struct notifyx *nx, struct nx_node *n)
{
	struct kobj *k = n->kref;

	if (k && k->subs == n && !n->knext && k->kmask && !nx->forked) {
		int fd = open_node(nx, n);
		if (fd >= 0) {
			unmark(nx, k, fd);
			close(fd);
		}
	}
	if ((k = unsubscribe(n)))
		drop_kobj(fan_of(nx), k);
}

static void bury_one(void *ctx, struct nx_node *n)
{
	detach(ctx, n);
}

/* n, dead with its subtree, leaves the tree; freed after the current batch
 * (records and deferrals may still name its nodes: they skip dead ones). */
static void to_graveyard(struct notifyx *nx, struct nx_node *n)
{
	struct fan *fa = fan_of(nx);

	nx_node_unlink(&nx->paths, n);
	n->next = fa->graveyard;
	fa->graveyard = n;
}

/* Takes n and its subtree out of the tree (marks first, while paths still
 * lead to them). */
static void bury(struct notifyx *nx, struct nx_node *n)
{
	nx_kt_bury(nx, n, bury_one, nx, &fan_of(nx)->graveyard);
}

/* ---- CREATEs a listing reported already ---- */

static bool sup_take(struct fan *fa, const void *node, const char *name, size_t len)
{
	return nx_kt_take(&fa->suppress, nx_kt_key(node, name, len, 0));
}

/* The path of n's entry name, relative to the watch root, in fa->path[i]. */
static size_t entry_path(struct fan *fa, const struct nx_node *n, const char *name, size_t nlen,
			 int i)
{
	return nx_kt_entry_path(fa->path[i], n, name, nlen);
}

static void too_long(struct notifyx *nx, struct nx_node *n)
{
	nx_kt_too_long(nx, n, fan_of(nx)->path[2]);
}

/* ---- walking directories ---- */

static bool fs_mode(const struct nx_watch *w)
{
	const struct fwatch *fw = w->bdata;

	return fw && fw->fsmode;
}

static int open_dir(struct notifyx *nx, const struct nx_node *n, int pfd, const char *name)
{
	int flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK;

	if (n->parent || (n->watch->flags & NOTIFYX_WATCH_NOFOLLOW))
		flags |= O_NOFOLLOW;
	if (pfd >= 0 || !n->parent)
		return openat(pfd >= 0 ? pfd : AT_FDCWD, name, flags);
	return open_below(nx, n, NULL, 0, flags);
}

/* A child directory of a watch that is not recursive: named, not marked,
 * not entered. */
static void shallow_child(struct notifyx *nx, struct nx_node *n, int pfd, const char *name,
			  size_t len)
{
	struct nx_node *c;
	int fd;

	if (nx_node_find(&nx->paths, n, name, len) || !(c = nx_node_add(&nx->paths, n, name, len)))
		return;
	fd = openat(pfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || attach(nx, c, fd, false) < 0)
		bury(nx, c); /* its own events are not named: at worst they are missed */
	if (fd >= 0)
		close(fd);
}

static void shallow(struct nx_kt_walk *wk, struct nx_node *n, int fd, const char *name, size_t len)
{
	shallow_child(wk->nx, n, fd, name, len);
}

/* nx_kt_walk's enter(): marks directory node n. */
static int enter(struct nx_kt_walk *wk, struct nx_node *n, int pfd, const char *name,
		 const char *rel)
{
	struct notifyx *nx = wk->nx;
	struct fan *fa = fan_of(nx);
	struct nx_watch *w = n->watch;
	struct kobj *k;
	int fd, err;

	(void)rel; /* (open_dir reaches the root's descendants through the held root) */
	if ((fd = open_dir(nx, n, pfd, name)) < 0)
		return -1;
	if (nx_kt_other_dev(n, fd)) {
		close(fd);
		bury(nx, n);
		return NX_KT_SKIP;
	}
	if (attach(nx, n, fd, !fs_mode(w)) < 0) {
		err = errno;
		close(fd);
		errno = err;
		return -1;
	}
	k = n->kref;
	/* The listing's OPEN, ACCESS and CLOSE_NOWRITE are the library's own. */
	nx_map_put(&fa->listed, k->key, (void *)1);
	k->listed_at = fa->epoch;
	/* Filesystem marks: placed by the listing, as inode marks place what
	 * they list (the table is then ahead of the events not read yet, which
	 * the moves' checks by identity allow for). */
	if (fs_mode(w))
		k->gen = fa->fsgen;
	return fd;
}

/* A filesystem below the root that cannot be marked (ENODEV) is one
 * directory's failure, an ERROR; with filesystem marks, fs_mark_submounts()
 * reported it already. */
static bool quiet(struct nx_kt_walk *wk, struct nx_node *n, int err)
{
	(void)wk;
	return err == ENODEV && n->parent && fs_mode(n->watch);
}

/*
 * Marks directory name (relative to pfd, the directory of n's parent, or by
 * path when pfd is -1), which is node n, then lists it and does the same for
 * its subdirectories (recursive watches) or names them (others): see
 * nx_kt_walk.
 */
static int walk(struct notifyx *nx, struct nx_node *n, int pfd, const char *name, char *rel,
		size_t rel_len, bool report, bool fatal)
{
	struct fan *fa = fan_of(nx);
	struct nx_kt_walk wk = { .nx = nx, .report = report, .fatal = fatal,
				 .reported = &fa->suppress, .scratch = fa->path[1],
				 .enter = enter, .shallow = shallow, .quiet = quiet,
				 .bury = bury };

	return nx_kt_walk(&wk, n, pfd, name, rel, rel_len, 0);
}

static void defer(struct notifyx *nx, struct nx_node *n, const char *name, size_t nlen,
		  bool report)
{
	struct fan *fa = fan_of(nx);

	if (fa->ndeferred == fa->deferred_cap) {
		size_t cap = fa->deferred_cap ? fa->deferred_cap * 2 : 8;
		struct deferred *v = realloc(fa->deferred, cap * sizeof(*v));
		if (!v) {
			nx_lost(nx, n->watch);
			return;
		}
		fa->deferred = v;
		fa->deferred_cap = cap;
	}
	struct deferred *d = &fa->deferred[fa->ndeferred];
	if (!(d->name = strndup(name, nlen))) {
		nx_lost(nx, n->watch);
		return;
	}
	d->node = n;
	d->report = report;
	fa->ndeferred++;
}

/* Makes node n/name and walks it: the directory at dname (the node's name
 * when NULL) relative to fd. */
static void walk_new(struct notifyx *nx, struct nx_node *n, const char *name, size_t nlen,
		     int fd, const char *dname, bool report)
{
	struct fan *fa = fan_of(nx);
	size_t len = entry_path(fa, n, name, nlen, 2);
	struct nx_node *c;

	if (len == SIZE_MAX)
		too_long(nx, n);
	else if (!(c = nx_node_add(&nx->paths, n, name, nlen)))
		nx_lost(nx, n->watch);
	else if (walk(nx, c, fd, dname ? dname : c->name, fa->path[2], len, report, false) < 0)
		nx_lost(nx, n->watch);
}

/* A directory arrived at n/name: mark and list it (or only name it). */
static void add_subdir(struct notifyx *nx, struct nx_node *n, const char *name, size_t nlen,
		       bool report, bool retry)
{
	struct nx_watch *w = n->watch;
	int pfd;

	if (w->ended || n->dead || nx_node_find(&nx->paths, n, name, nlen))
		return;
	if ((pfd = open_node(nx, n)) < 0) {
		/* Events not read yet moved n (its path now ends nowhere, in a
		 * file, or at another object): try again once they are read; if
		 * it is still not there, events to come say where it went.  Any
		 * other failure (descriptors, memory, I/O) loses the listing. */
		bool moved = errno == ENOENT || errno == ESTALE || errno == ENOTDIR ||
			     errno == ELOOP;
		if (moved && retry)
			defer(nx, n, name, nlen, report);
		else if (!moved)
			nx_lost(nx, w);
		return;
	}
	if (!(w->flags & NOTIFYX_WATCH_RECURSIVE)) {
		shallow_child(nx, n, pfd, name, nlen);
		close(pfd);
		return;
	}
	walk_new(nx, n, name, nlen, pfd, NULL, report);
	close(pfd);
}

static struct fsmark *fsmark_of(const struct fan *fa, const unsigned char *fsid);
static int open_handle(struct fan *fa, struct fsmark *fm, const unsigned char *id,
		       size_t idlen);

/* Directory id arrived at n/name (moved in, or renamed from a place the
 * table did not know): its directories become nodes, and with report its
 * entries are listed.  With filesystem marks it is found by its identifier,
 * since events not read yet may have moved it, and listed as it is now,
 * under the name the event gives. */
static void list_moved_in(struct notifyx *nx, struct nx_node *n, const char *name, size_t nlen,
			  const struct fanid *id, bool report)
{
	struct fan *fa = fan_of(nx);
	struct fsmark *fm = id && id->len >= 16 ? fsmark_of(fa, id->data) : NULL;
	struct nx_watch *w = n->watch;
	int fd;

	if (!fm) {
		add_subdir(nx, n, name, nlen, report, true);
		return;
	}
	if (w->ended || n->dead || nx_node_find(&nx->paths, n, name, nlen))
		return;
	if ((fd = open_handle(fa, fm, id->data, id->len)) < 0) {
		/* Gone (then events to come say so, and its path leads nowhere
		 * too): by its path, at worst late. */
		if (errno == ESTALE)
			add_subdir(nx, n, name, nlen, report, true);
		else
			nx_lost(nx, w);
		return;
	}
	walk_new(nx, n, name, nlen, fd, ".", report);
	close(fd);
}

static void retry_deferred(struct notifyx *nx)
{
	struct fan *fa = fan_of(nx);
	struct deferred *v = fa->deferred;
	size_t n = fa->ndeferred;

	fa->deferred = NULL;
	fa->ndeferred = fa->deferred_cap = 0;
	for (size_t i = 0; i < n; i++) {
		struct nx_node *node = v[i].node;
		if (!node->dead && !node->watch->ended)
			add_subdir(nx, node, v[i].name, strlen(v[i].name), v[i].report, false);
		free(v[i].name);
	}
	free(v);
}

/* The kernel queue was read dry. */
static void dry_point(struct notifyx *nx)
{
	struct fan *fa = fan_of(nx);

	nx_map_free(&fa->suppress);
	nx_map_free(&fa->listed);
	fa->epoch++; /* what was listed before is not ahead of what comes */
	if (fa->ndeferred)
		retry_deferred(nx);
	if (!fa->suppress.len)
		nx_kt_free_grave(nx, &fa->graveyard);
}

/* ---- reading the kernel queue ---- */

/* Indexes the directory moves among the records read since the last call.
 * Only resolve() looks for them, and calls it: reading decodes nothing
 * twice when no directory is to be found. */
static void index_moves(struct fan *fa)
{
	struct fanrec r;

	while (fa->indexed < fa->len) {
		bool ok = nx_fan_decode(fa->buf, fa->len, fa->indexed, &r);
		if (!r.size) /* a length that cannot be trusted: see handle_records */
			break;
		if (ok && (r.mask & FAN_RENAME) && (r.mask & FAN_ONDIR) && r.fid.len &&
		    r.odfid.len && r.oname.len) {
			if (fa->npending == fa->pend_cap) {
				size_t cap = fa->pend_cap ? 2 * fa->pend_cap : 64;
				struct pending *v = realloc(fa->pending, cap * sizeof(*v));
				if (!v) {
					fa->unsure = true;
					break;
				}
				fa->pending = v;
				fa->pend_cap = cap;
			}
			fa->pending[fa->npending++] = (struct pending){ fa->indexed, r.fid.key };
		}
		fa->indexed += r.size;
	}
	fa->indexed = fa->len;
}

/* One read of the kernel queue into buf, after what it holds: the bytes
 * read, 0 when there was nothing, -1 on error. */
static ssize_t fan_read(struct fan *fa, size_t size)
{
	ssize_t n;

	do
		n = read(fa->fd, fa->buf + fa->len, size);
	while (n < 0 && errno == EINTR);
	if (n < 0 && errno == EAGAIN)
		n = 0;
	if (n <= 0) {
		fa->more = false;
		return n;
	}
	fa->len += (size_t)n;
	/* A read that filled its room: the kernel may hold more, such as the
	 * second FAN_RENAME of an exchange. */
	fa->more = size - (size_t)n < 4096;
	return n;
}

/* Reads the kernel queue dry into buf, behind the records not handled yet,
 * so that the directory moves that followed the record being handled are
 * known: false when it could not (buf full, an error). */
static bool read_ahead(struct fan *fa)
{
	for (;;) {
		ssize_t n;
		if (READ_AHEAD_MAX - fa->len < READ_BUF)
			return false;
		if ((n = fan_read(fa, READ_BUF)) <= 0)
			return n == 0 && !fa->unsure;
		fa->ahead = true;
	}
}

/* The records before pos were handled: they leave buf. */
static void consume(struct fan *fa, size_t pos)
{
	size_t j = 0;

	memmove(fa->buf, fa->buf + pos, fa->len - pos);
	fa->len -= pos;
	fa->indexed = fa->indexed > pos ? fa->indexed - pos : 0;
	for (size_t i = fa->pend_start; i < fa->npending; i++) {
		if (fa->pending[i].pos >= pos) {
			fa->pending[j] = fa->pending[i];
			fa->pending[j++].pos -= pos;
		}
	}
	fa->npending = j;
	fa->pend_start = 0;
	if (pos)
		fa->waited = false;
	if (!fa->len) {
		fa->unsure = false;
		if (fa->ahead) /* give back what a read ahead used */
			madvise(fa->buf, READ_AHEAD_MAX, MADV_DONTNEED);
		fa->ahead = false;
	}
}

/* ---- filesystem marks: directories found on demand ----
 *
 * A filesystem mark reports every directory of the filesystem.  A directory
 * the path table does not know is opened by its handle, its path read from
 * /proc/self/fd, and looked for under the roots of the watches that use
 * filesystem marks: inside one, the nodes on the way are made (and cached:
 * a rename anywhere moves one node); outside all, its key is remembered in
 * the "outside" set, so that later events there cost one hash lookup.  A
 * directory renamed may bring what was outside inside: the set is then
 * forgotten. */

#define OUTSIDE_MAX 65536

/* Opens the directory that handles of fm are decoded against.  It must be a
 * real open (not O_PATH), which the filesystem mark reports: that OPEN and
 * CLOSE_NOWRITE are the library's own, dropped like a listing's. */
static int mount_fd(struct fan *fa, struct fsmark *fm)
{
	if (fm->mfd < 0) {
		nx_map_put(&fa->listed, fm->dirkey, (void *)1);
		fm->mfd = open(fm->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK);
	}
	return fm->mfd;
}

/* The descriptors of mount_fd() stay open while the kernel queue is being
 * read (a burst of new directories costs no open each), and are closed
 * before it is read dry, so that their CLOSE_NOWRITE is read (and dropped)
 * too: true when there was one. */
static bool close_mount_fds(struct fan *fa)
{
	struct fsmark *fm;
	size_t pos = 0;
	bool any = false;

	while (nx_map_next(&fa->fsmarks, &pos, NULL, (void **)&fm)) {
		if (fm->mfd >= 0) {
			close(fm->mfd);
			fm->mfd = -1;
			any = true;
		}
	}
	return any;
}

static struct fsmark *fsmark_of(const struct fan *fa, const unsigned char *fsid)
{
	struct fsmark *m = nx_map_get(&fa->fsmarks, nx_fan_key(fsid, 8));

	return m && !memcmp(m->fsid, fsid, 8) ? m : NULL;
}

/* A directory on the way up from one being resolved. */
struct link {
	int fd;
	char name[NAME_MAX + 1]; /* its name in the next one up */
	size_t name_len;
	size_t idlen;
	uint64_t key;
	unsigned char id[ID_MAX];
};

#define RESOLVE_DEPTH (PATH_MAX / 2)

/* The first FAN_RENAME not handled yet that moves directory id (key): where
 * it was when the event being handled happened.  False when none. */
static bool pending_move(struct fan *fa, const unsigned char *id, size_t idlen, uint64_t key,
			 struct fanrec *out)
{
	while (fa->pend_start < fa->npending && fa->pending[fa->pend_start].pos < fa->next)
		fa->pend_start++;
	for (size_t i = fa->pend_start; i < fa->npending; i++)
		if (fa->pending[i].key == key &&
		    nx_fan_decode(fa->buf, fa->len, fa->pending[i].pos, out) &&
		    out->fid.len == idlen && !memcmp(out->fid.data, id, idlen))
			return true;
	return false;
}

/* True when one of the n directories of chain was moved by a record at pos
 * from or after. */
static bool moved_since(const struct fan *fa, size_t from, const struct link *chain, size_t n)
{
	for (size_t i = fa->npending; i-- > fa->pend_start && fa->pending[i].pos >= from;)
		for (size_t j = 0; j < n; j++)
			if (fa->pending[i].key == chain[j].key)
				return true;
	return false;
}

/* True when the directory of l is where the events read so far put it for
 * the watches with filesystem marks: nothing above it needs to be known. */
static bool anchored(const struct fan *fa, const struct link *l)
{
	struct fanid id = { l->id, l->idlen, l->key };
	const struct kobj *k = kobj_find(fa, &id);

	if (!k || k->gen != fa->fsgen)
		return false;
	for (const struct nx_node *s = k->subs; s; s = s->knext)
		if (!s->dead && fs_mode(s->watch))
			return true;
	return false;
}

/* Opens (O_PATH) the object of identifier id on the filesystem of mfd, which
 * must be a real open (the kernel takes no O_PATH one there).  Needs
 * CAP_DAC_READ_SEARCH. */
static int open_id(int mfd, const unsigned char *id, size_t idlen)
{
	struct {
		struct file_handle fh;
		unsigned char bytes[128];
	} h;

	if (idlen < 16 || idlen > 16 + sizeof(h.bytes))
		return errno = EINVAL, -1;
	memcpy(&h.fh.handle_bytes, id + 8, 4);
	memcpy(&h.fh.handle_type, id + 12, 4);
	if (h.fh.handle_bytes != idlen - 16)
		return errno = EINVAL, -1;
	memcpy(h.bytes, id + 16, h.fh.handle_bytes);
	return open_by_handle_at(mfd, &h.fh, O_PATH | O_CLOEXEC);
}

static int open_handle(struct fan *fa, struct fsmark *fm, const unsigned char *id,
		       size_t idlen)
{
	int mfd = mount_fd(fa, fm);

	return mfd < 0 ? -1 : open_id(mfd, id, idlen);
}

/* The node of kobj k in watch w, if any. */
static struct nx_node *node_in(const struct kobj *k, const struct nx_watch *w)
{
	for (struct nx_node *s = k ? k->subs : NULL; s; s = s->knext)
		if (s->watch == w && !s->dead)
			return s;
	return NULL;
}

/* Goes up from directory chain[0] (open, its identifier set) to the top of
 * its filesystem, or to a directory anchored, as things were when the event
 * being handled happened: by "..", or, where a move not handled yet moved a
 * directory, by where it was before.  Returns the number of links; the fd
 * of the last one is -1 when it was anchored by a move's record alone. */
static size_t climb(struct notifyx *nx, struct link *chain, size_t max)
{
	struct fan *fa = fan_of(nx);
	char kpath[32], *path = fa->path[3];
	size_t n = 1;

	while (n < max) {
		struct link *l = &chain[n - 1], *up = &chain[n];
		struct fanrec pr;
		struct stat st;
		ssize_t len;
		char *slash;
		if (nx_map_get(&fa->outside, l->key) || (n > 1 && anchored(fa, l)))
			break;
		if (pending_move(fa, l->id, l->idlen, l->key, &pr)) {
			struct fsmark *fm = fsmark_of(fa, l->id);
			if (pr.oname.len > NAME_MAX || pr.odfid.len > ID_MAX)
				break;
			memcpy(l->name, pr.oname.name, pr.oname.len);
			l->name[pr.oname.len] = '\0';
			l->name_len = pr.oname.len;
			memcpy(up->id, pr.odfid.data, pr.odfid.len);
			up->idlen = pr.odfid.len;
			up->key = pr.odfid.key;
			/* Known where it was: its place may be all that is left of it. */
			up->fd = -1;
			if (anchored(fa, up))
				return n + 1;
			if (!fm || (up->fd = open_handle(fa, fm, up->id, up->idlen)) < 0)
				break;
			n++;
			continue;
		}
		snprintf(kpath, sizeof(kpath), "/proc/self/fd/%d", l->fd);
		len = readlink(kpath, path, PATH_MAX - 1);
		if (len <= 1 || path[0] != '/' || fstat(l->fd, &st) < 0 || !st.st_nlink)
			break; /* the top, or gone */
		path[len] = '\0';
		slash = strrchr(path, '/');
		l->name_len = strlen(slash + 1);
		memcpy(l->name, slash + 1, l->name_len + 1);
		up->fd = openat(l->fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (up->fd < 0)
			break;
		/* Up across mount points too: a filesystem mounted in a tree. */
		if (fd_id(up->fd, up->id, &up->idlen) < 0 ||
		    (up->idlen == l->idlen && !memcmp(up->id, l->id, l->idlen))) {
			close(up->fd); /* the top */
			break;
		}
		up->key = nx_fan_key(up->id, up->idlen);
		n++;
	}
	return n;
}

static void close_chain(struct link *chain, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (chain[i].fd >= 0)
			close(chain[i].fd);
}

#define CLIMB_TRIES 4

/*
 * The kobj of directory id, found on demand for the watches that use
 * filesystem marks (see above); the kobj already known, or NULL, when it is
 * outside them all or gone.
 *
 * The directory is placed where it was when the event being handled
 * happened, not where it is now: the kernel queue is read ahead first, so
 * that every move since is known (climb() goes up through where each
 * directory was before its first move not handled yet), and read again
 * after the climb, which is done again if one of its directories moved
 * meanwhile.  When that cannot be made sure of, the watches are told
 * (OVERFLOW) rather than given wrong paths.
 */
static struct kobj *resolve(struct notifyx *nx, const struct fanid *id)
{
	struct fan *fa = fan_of(nx);
	struct fsmark *fm = id->len >= 16 ? fsmark_of(fa, id->data) : NULL;
	struct link *chain;
	struct nx_watch *w;
	size_t n = 0, pos = 0;
	bool inside = false, behind = false, sure;
	int fd;

	if (!fm || id->len > ID_MAX)
		return kobj_find(fa, id);
	if (!(chain = malloc(RESOLVE_DEPTH * sizeof(*chain))))
		return kobj_find(fa, id);
	sure = read_ahead(fa);
	index_moves(fa);
	for (int tries = 0;; tries++) {
		size_t seen = fa->len;
		if ((fd = open_handle(fa, fm, id->data, id->len)) < 0) {
			/* Gone: a handle is never reused, nothing will be found
			 * there. */
			if (errno == ESTALE)
				nx_map_put(&fa->outside, id->key, (void *)1);
			free(chain);
			return kobj_find(fa, id);
		}
		chain[0].fd = fd;
		chain[0].idlen = id->len;
		chain[0].key = id->key;
		memcpy(chain[0].id, id->data, id->len);
		n = climb(nx, chain, RESOLVE_DEPTH);
		sure = read_ahead(fa) && sure;
		index_moves(fa);
		if (!moved_since(fa, seen, chain, n))
			break;
		if (tries == CLIMB_TRIES) {
			sure = false;
			break;
		}
		close_chain(chain, n);
	}
	while (nx_map_next(&nx->watches, &pos, NULL, (void **)&w)) {
		struct fwatch *fw = w->bdata;
		struct nx_node *node = NULL;
		size_t top;
		if (!fw || !fw->fsmode || w->ended || !w->root || !w->root->kref)
			continue;
		if (!sure)
			nx_lost(nx, w);
		/* From the highest of the chain the watch knows: its root, or a
		 * directory anchored. */
		for (top = n; top-- > 0;) {
			struct fanid lid = { chain[top].id, chain[top].idlen, chain[top].key };
			if (chain[top].key == ((struct kobj *)w->root->kref)->key)
				node = w->root;
			else
				node = node_in(kobj_find(fa, &lid), w);
			if (node)
				break;
		}
		if (!node)
			continue;
		/* Down from there: nodes known by identifier are where the
		 * events read so far put them; the others are made by name. */
		for (size_t j = top; node && j-- > 0;) {
			struct link *l = &chain[j];
			struct fanid lid = { l->id, l->idlen, l->key };
			struct nx_node *c = node_in(kobj_find(fa, &lid), w);
			struct stat st;
			if (c && c->parent == node)
				goto next;
			c = nx_node_find(&nx->paths, node, l->name, l->name_len);
			/* The table is made of listings, which can be ahead of
			 * the event (made after it): a directory it does not
			 * have where the event was is one that left a directory
			 * before that was listed.  Its events are in the
			 * listing of where it went, made when its move is read
			 * (as with inode marks, which hear nothing of a
			 * directory until they list it). */
			if (!c || (c->kref && ((struct kobj *)c->kref)->key != l->key)) {
				behind = true;
				node = NULL;
				break;
			}
			if (!c) {
				char *rel = fa->path[1];
				size_t len = entry_path(fa, node, l->name, l->name_len, 1);
				if (len == SIZE_MAX || nx_excluded(nx, w, rel, rel + len - l->name_len) ||
				    ((w->flags & NOTIFYX_WATCH_XDEV) &&
				     (fstat(l->fd, &st) < 0 || st.st_dev != w->dev))) {
					node = NULL;
					break;
				}
				if (!(c = nx_node_add(&nx->paths, node, l->name, l->name_len))) {
					nx_lost(nx, w); /* its events cannot be placed */
					node = NULL;
					break;
				}
			}
			if (c->kref && ((struct kobj *)c->kref)->key != l->key)
				detach(nx, c); /* the name held another directory */
			if (!c->kref && attach(nx, c, l->fd, false) < 0) {
				nx_lost(nx, w);
				node = NULL;
				break;
			}
next:
			node = c;
		}
		inside |= node != NULL;
	}
	if (fa->outside.len >= OUTSIDE_MAX)
		nx_map_free(&fa->outside);
	for (size_t i = 0; i < n && !inside && !behind && sure; i++) /* nor is anything above it */
		nx_map_put(&fa->outside, chain[i].key, (void *)1);
	close_chain(chain, n);
	free(chain);
	struct kobj *k = kobj_find(fa, id);
	if (k && inside)
		k->gen = fa->fsgen;
	return k;
}

/* A kobj known, or found on demand: once per kobj for the fsmode watches
 * there are (fsgen counts their changes). */
static struct kobj *kobj_get(struct notifyx *nx, const struct fanid *id)
{
	struct fan *fa = fan_of(nx);
	struct kobj *k = kobj_find(fa, id);

	if (!fa->nfswatches || (k && k->gen == fa->fsgen) || nx_map_get(&fa->outside, id->key))
		return k;
	return resolve(nx, id);
}


/* The mount point of mount id (malloc'd), from /proc/self/mountinfo. */
static char *mount_point(uint64_t id)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL, *mp = NULL;
	size_t cap = 0;

	if (!f || !id) {
		if (f)
			fclose(f);
		return NULL;
	}
	while (!mp && getline(&line, &cap, f) > 0) {
		char *save = NULL, *tok = strtok_r(line, " ", &save);
		if (!tok || strtoull(tok, NULL, 10) != id)
			continue;
		for (int i = 0; tok && i < 4; i++)
			tok = strtok_r(NULL, " ", &save);
		if (tok) {
			nx_mountinfo_unescape(tok);
			mp = strdup(tok);
		}
	}
	free(line);
	fclose(f);
	return mp;
}

/* Marks the filesystem of the directory at path for w. */
static int fs_mark(struct notifyx *nx, struct nx_watch *w, const char *path, uint64_t mask)
{
	struct fan *fa = fan_of(nx);
	struct fwatch *fw = w->bdata;
	unsigned char id[ID_MAX];
	struct fsmark *fm;
	size_t len;
	int fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC), err;

	if (fd < 0)
		return -1;
	if (fd_id(fd, id, &len) < 0)
		goto fail;
	struct fsmark **v = realloc(fw->marks, (fw->nmarks + 1) * sizeof(*v));
	uint64_t *mv = v ? realloc(fw->mnts, (fw->nmarks + 1) * sizeof(*mv)) : NULL;
	if (v)
		fw->marks = v;
	if (mv)
		fw->mnts = mv;
	if (!v || !mv) {
		errno = ENOMEM;
		goto fail;
	}
	if (!(fm = fsmark_of(fa, id))) {
		/* Handles are decoded against the mount point: unlike the
		 * watch root, it cannot be renamed while mounted. */
		char *mp = mount_point(mnt_of(fd));
		if (!(fm = calloc(1, sizeof(*fm))) || !(fm->path = mp ? mp : strdup(path)) ||
		    nx_map_put(&fa->fsmarks, nx_fan_key(id, 8), fm) < 0) {
			if (fm)
				free(fm->path);
			else
				free(mp);
			free(fm);
			errno = ENOMEM;
			goto fail;
		}
		memcpy(fm->fsid, id, 8);
		fm->mfd = -1;
		fm->dirkey = nx_fan_key(id, len);
		int mfd = open(fm->path, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (mfd >= 0 && fd_id(mfd, id, &len) == 0)
			fm->dirkey = nx_fan_key(id, len);
		if (mfd >= 0)
			close(mfd);
	}
	if ((mask & ~fm->kmask) &&
	    mark_fd(fa, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, fm->kmask | mask, fd) < 0) {
		err = errno;
		if (!fm->refs) {
			nx_map_del(&fa->fsmarks, nx_fan_key(id, 8));
			free(fm->path);
			free(fm);
		}
		errno = err == EOPNOTSUPP ? ENODEV : err;
		goto fail;
	}
	fm->kmask |= mask;
	fm->refs++;
	fw->marks[fw->nmarks] = fm;
	fw->mnts[fw->nmarks++] = mnt_of(fd);
	close(fd);
	return 0;
fail:
	err = errno;
	close(fd);
	errno = err;
	return -1;
}

static void fs_unmark(struct notifyx *nx, struct fwatch *fw)
{
	struct fan *fa = fan_of(nx);

	for (size_t i = 0; i < fw->nmarks; i++) {
		struct fsmark *fm = fw->marks[i];
		if (--fm->refs)
			continue;
		if (!nx->forked && fa->fd >= 0)
			fanotify_mark(fa->fd, FAN_MARK_REMOVE | FAN_MARK_FILESYSTEM, fm->kmask,
				      AT_FDCWD, fm->path);
		nx_map_del(&fa->fsmarks, nx_fan_key(fm->fsid, 8));
		if (fm->mfd >= 0)
			close(fm->mfd);
		free(fm->path);
		free(fm);
	}
	fw->nmarks = 0;
}

/* Marks the filesystems mounted inside w's tree (not with XDEV). */
static int fs_mark_submounts(struct notifyx *nx, struct nx_watch *w, uint64_t mask)
{
	struct fwatch *fw = w->bdata;
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL;
	size_t cap = 0;
	int ret = 0;

	if (!f)
		return 0;
	while (ret == 0 && getline(&line, &cap, f) > 0) {
		char *mp = NULL, *save = NULL, *tok = strtok_r(line, " ", &save);
		for (int i = 0; tok && i < 4; i++)
			mp = tok = strtok_r(NULL, " ", &save);
		if (!mp)
			continue;
		nx_mountinfo_unescape(mp);
		size_t len = strlen(mp);
		if (len <= fw->root_len || memcmp(mp, fw->root, fw->root_len) ||
		    (fw->root_len > 1 && mp[fw->root_len] != '/'))
			continue;
		if (nx_excluded(nx, w, mp + fw->root_len + (fw->root_len > 1),
				strrchr(mp, '/') + 1))
			continue;
		if (fs_mark(nx, w, mp, mask) == 0)
			continue;
		if (errno == ENOMEM || errno == ENOSPC)
			ret = -1;
		else if (errno != ENOENT) /* say what is not watched */
			nx_kt_error(nx, w, mp + fw->root_len + (fw->root_len > 1), errno);
	}
	free(line);
	fclose(f);
	return ret;
}

/* Sets up w with filesystem marks, its root open at fd: 0, or -1 with
 * errno; EPERM when this process may not (the caller then uses inode
 * marks). */
static int fs_add_watch(struct notifyx *nx, struct nx_watch *w, int fd)
{
	struct fan *fa = fan_of(nx);
	struct fwatch *fw = w->bdata;
	uint64_t mask = nx_fan_mask(w->events) | FAN_CREATE | FAN_DELETE | FAN_RENAME |
			FAN_DELETE_SELF | FAN_ONDIR;
	char kpath[32];
	ssize_t len;
	int err;

	snprintf(kpath, sizeof(kpath), "/proc/self/fd/%d", fd);
	if ((len = readlink(kpath, fa->path[3], PATH_MAX - 1)) <= 0 || fa->path[3][0] != '/' ||
	    !(fw->root = strndup(fa->path[3], (size_t)len))) {
		err = len <= 0 ? errno : ENOMEM;
		errno = err ? err : ENOENT;
		return -1;
	}
	fw->root_len = (size_t)len;
	fw->fsmode = true;
	if (attach(nx, w->root, fd, false) < 0 || fs_mark(nx, w, fw->root, mask) < 0 ||
	    (!(w->flags & NOTIFYX_WATCH_XDEV) && fs_mark_submounts(nx, w, mask) < 0))
		goto fail;
	fa->nfswatches++;
	fa->fsgen++;
	nx_map_free(&fa->outside); /* some of it is inside now */
	/* The tree is walked, listed or not: every directory is a node from
	 * the start, so that the events of a directory deleted (or moved
	 * away) before they are read are still placed (by identifier: it
	 * cannot be found on demand any more), and a watch added later, whose
	 * walk makes its own nodes current, takes nothing from this one.
	 * fw->fsmode stays set on failure: the caller undoes the marks, and
	 * does not fall back to inode marks, whose listing would repeat the
	 * one already queued. */
	fa->path[2][0] = '\0';
	if (walk(nx, w->root, fd, ".", fa->path[2], 0, w->flags & NOTIFYX_WATCH_LIST, true) < 0 ||
	    w->ended)
		return -1;
	return 0;
fail:
	err = errno;
	fw->fsmode = false;
	fs_unmark(nx, fw);
	detach(nx, w->root);
	errno = err;
	return -1;
}

/* Filesystem marks: a directory that an event names with its identifier (a
 * mkdir, a rename) becomes a node at once, at the place the event gives, so
 * that the table follows the events (no look-up by the path of now). */
static struct nx_node *node_by_id(struct notifyx *nx, struct nx_node *parent, const char *name,
				  size_t len, const struct fanid *id)
{
	struct fan *fa = fan_of(nx);
	struct nx_watch *w = parent->watch;
	struct nx_node *c;
	struct kobj *k;

	if (!id || id->len < 16 || id->len > ID_MAX || !fs_mode(w))
		return NULL;
	c = nx_node_find(&nx->paths, parent, name, len);
	if (c && c->kref && ((struct kobj *)c->kref)->key == id->key)
		return c;
	entry_path(fa, parent, name, len, 1);
	if (nx_excluded(nx, w, fa->path[1], name))
		return NULL;
	if (c)
		bury(nx, c); /* the name held another directory */
	if (!(k = kobj_find(fa, id))) {
		if (nx_map_get(&fa->kobjs, id->key))
			return NULL;
		if (!(k = calloc(1, sizeof(*k))) || nx_map_put(&fa->kobjs, id->key, k) < 0) {
			free(k);
			nx_lost(nx, w); /* its events cannot be placed */
			return NULL;
		}
		k->key = id->key;
		k->idlen = id->len;
		memcpy(k->id, id->data, id->len);
		k->isdir = true;
		k->mnt_id = parent->kref ? ((struct kobj *)parent->kref)->mnt_id : 0;
		k->gen = fa->fsgen;
	}
	/* Another node of this watch for it is stale. */
	struct nx_node *s = node_in(k, w);
	if (s && s->parent)
		bury(nx, s);
	if (!(k = kobj_find(fa, id)))
		return node_by_id(nx, parent, name, len, id);
	if (!(c = nx_node_add(&nx->paths, parent, name, len))) {
		nx_lost(nx, w); /* its events cannot be placed */
		return NULL;
	}
	c->kref = k;
	c->knext = k->subs;
	k->subs = c;
	return c;
}

/* ---- dispatching kernel events ---- */

static size_t subscribers(struct notifyx *nx, const struct kobj *k, int i)
{
	struct fan *fa = fan_of(nx);
	size_t n = 0;

	for (struct nx_node *s = k ? k->subs : NULL; s; s = s->knext) {
		if (n == fa->vec_cap[i]) {
			size_t cap = n ? n * 2 : 8;
			struct nx_node **v = realloc(fa->vec[i], cap * sizeof(*v));
			if (!v) {
				for (; s; s = s->knext)
					nx_lost(nx, s->watch);
				break;
			}
			fa->vec[i] = v;
			fa->vec_cap[i] = cap;
		}
		fa->vec[i][n++] = s;
	}
	return n;
}

/* ---- held roots ---- */

/* Holds directory root w, open at fd (see struct fwatch): 0, or -1 when no
 * descriptor is left. */
static int hold_root(struct notifyx *nx, struct nx_watch *w, int fd)
{
	struct fwatch *fw = w->bdata;
	int pfd = openat(fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
	char kpath[32], *path = fan_of(nx)->path[3], *slash;
	ssize_t len;

	snprintf(kpath, sizeof(kpath), "/proc/self/fd/%d", fd);
	if (pfd >= 0 && mnt_of(pfd) != mnt_of(fd) &&
	    (len = readlink(kpath, path, PATH_MAX - 1)) > 1 && path[0] == '/') {
		path[len] = '\0';
		slash = strrchr(path, '/');
		if ((fw->hname = strdup(slash + 1))) {
			fw->hfd = pfd;
			return 0;
		}
	}
	if (pfd >= 0)
		close(pfd);
	fw->hfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	return fw->hfd < 0 ? -1 : 0;
}

/*
 * A directory held open is not deleted for the kernel until it is closed:
 * its FAN_DELETE_SELF waits for the library's descriptor (measured, kernel
 * 6.18: rmdir of a marked directory held O_PATH gives no event at all until
 * the close).  Its deletion is seen as the FAN_DELETE in its parent, which
 * names it by identifier (root_deleted): filesystem marks hear it anyway;
 * inode marks mark the parent for it (the guard), and mark the new parent
 * after a MOVE_SELF.  A root whose parent cannot be marked (not readable,
 * no mark left) is held anyway, with an ERROR on "": its deletion will not
 * be seen.  A root held through its parent (a mount root) is not held
 * itself.
 */
static void guard_root(struct notifyx *nx, struct nx_watch *w)
{
	struct fwatch *fw = w->bdata;
	int pfd;

	if (!fw || fw->hfd < 0 || fw->hname || fw->fsmode)
		return;
	pfd = openat(fw->hfd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (pfd >= 0 && mark_fd(fan_of(nx), FAN_MARK_ADD, FAN_DELETE | FAN_ONDIR, pfd) == 0) {
		unsigned char id[ID_MAX];
		size_t len;
		/* Kept when the parent's own mark goes (detach). */
		fw->guard = fd_id(pfd, id, &len) == 0 ? nx_fan_key(id, len) : 0;
		close(pfd);
		return;
	}
	/* The root is still reached through what is held (dropping it would
	 * leave the watch to the absolute path), but nothing would tell its
	 * deletion: say so, as inotify does. */
	int err = errno;
	if (pfd >= 0)
		close(pfd);
	nx_kt_error(nx, w, "", err);
}

/* FAN_DELETE of directory k: the watches whose held root it was end. */
static void root_deleted(struct notifyx *nx, struct kobj *k)
{
	size_t count = subscribers(nx, k, 1);
	struct stat st;

	for (size_t i = 0; i < count; i++) {
		struct nx_node *n = fan_of(nx)->vec[1][i];
		struct fwatch *fw = n->watch->bdata;
		if (n->dead || n->parent || n->watch->ended || !fw || fw->hfd < 0 || fw->hname ||
		    fstat(fw->hfd, &st) < 0 || st.st_nlink)
			continue;
		nx_emit(nx, n->watch, NOTIFYX_DELETE_SELF, NOTIFYX_EVENT_ISDIR, 0, 0, "", 0, NULL, 0);
		nx_end_watch(nx, n->watch);
	}
}

/* Does name exist in n's directory now? */
static bool exists_now(struct notifyx *nx, struct nx_node *n, const char *name, size_t len)
{
	int fd = open_node(nx, n);
	char nm[NAME_MAX + 1];
	struct stat st;
	bool there;

	if (fd < 0 || len > NAME_MAX) {
		if (fd >= 0)
			close(fd);
		return false;
	}
	memcpy(nm, name, len);
	nm[len] = '\0';
	there = fstatat(fd, nm, &st, AT_SYMLINK_NOFOLLOW) == 0;
	close(fd);
	return there;
}

/* An event on entry name of node n's directory. */
static void child_event(struct notifyx *nx, struct nx_node *n, uint64_t mask, const char *name,
			size_t nlen)
{
	struct fan *fa = fan_of(nx);
	struct nx_watch *w = n->watch;
	bool isdir = mask & FAN_ONDIR;
	uint32_t flags = isdir ? NOTIFYX_EVENT_ISDIR : 0, types[8];
	size_t len = entry_path(fa, n, name, nlen, 0), count;
	bool both = (mask & FAN_CREATE) && (mask & FAN_DELETE);

	if (len == SIZE_MAX) {
		if (mask & FAN_CREATE)
			too_long(nx, n);
		return;
	}
	if ((mask & FAN_CREATE) && sup_take(fa, n, name, nlen))
		mask &= ~(uint64_t)FAN_CREATE; /* a listing reported it already */
	count = nx_fan_split(mask, both && exists_now(nx, n, name, nlen), types);
	for (size_t i = 0; i < count && !w->ended && !n->dead; i++) {
		/* entry_path again: add_subdir and emit may have used path[0] */
		len = entry_path(fa, n, name, nlen, 0);
		if (types[i] == NOTIFYX_DELETE) {
			sup_take(fa, n, name, nlen);
			nx_emit(nx, w, NOTIFYX_DELETE, flags, 0, 0, fa->path[0], len, NULL, 0);
			if (isdir)
				bury(nx, nx_node_find(&nx->paths, n, name, nlen));
		} else if (types[i] == NOTIFYX_CREATE) {
			nx_emit(nx, w, NOTIFYX_CREATE, flags, 0, 0, fa->path[0], len, NULL, 0);
			if (isdir && fs_mode(w))
				node_by_id(nx, n, name, nlen, fa->cur_fid);
			else if (isdir && !nx_excluded(nx, w, fa->path[0], name))
				add_subdir(nx, n, name, nlen, true, true);
		} else {
			nx_emit(nx, w, types[i], flags, 0, 0, fa->path[0], len, NULL, 0);
		}
	}
}

/* An event on the object of node n itself (a watch root, or a directory
 * that its parent names). */
static void self_event(struct notifyx *nx, struct nx_node *n, uint64_t mask, bool isdir)
{
	struct nx_watch *w = n->watch;
	uint32_t flags = isdir ? NOTIFYX_EVENT_ISDIR : 0, types[8];
	size_t count;

	if (n->parent) {
		/* Named by its parent; its end comes as the parent's DELETE or RENAME. */
		mask &= ~(uint64_t)(FAN_CREATE | FAN_DELETE | FAN_DELETE_SELF | FAN_MOVE_SELF);
		if (mask)
			child_event(nx, n->parent, mask | (isdir ? FAN_ONDIR : 0), n->name, n->name_len);
		return;
	}
	count = nx_fan_split(mask & ~(uint64_t)(FAN_CREATE | FAN_DELETE), false, types);
	for (size_t i = 0; i < count; i++)
		nx_emit(nx, w, types[i], flags, 0, 0, "", 0, NULL, 0);
	if (mask & FAN_MOVE_SELF) {
		nx_emit(nx, w, NOTIFYX_MOVE_SELF, flags, 0, 0, "", 0, NULL, 0);
		if (!w->ended) /* (a ONESHOT watch ended in nx_emit) */
			guard_root(nx, w);
	}
	if (mask & FAN_DELETE_SELF) {
		nx_emit(nx, w, NOTIFYX_DELETE_SELF, flags, 0, 0, "", 0, NULL, 0);
		nx_end_watch(nx, w);
	}
}

static void plain_event(struct notifyx *nx, const struct fanrec *r)
{
	struct fan *fa = fan_of(nx);
	struct kobj *k;
	size_t count;
	bool dot = r->name.len == 1 && r->name.name[0] == '.';

	fa->cur_fid = r->fid.len ? &r->fid : NULL;

	if (r->dfid.len && (dot || !r->name.len)) {
		/* The directory itself. */
		uint64_t mask = r->mask;
		if (!(k = kobj_get(nx, &r->dfid)))
			return;
		if (nx_map_get(&fa->listed, k->key))
			mask &= ~(uint64_t)(FAN_OPEN | FAN_ACCESS | FAN_CLOSE_NOWRITE);
		count = subscribers(nx, k, 0);
		for (size_t i = 0; i < count; i++)
			if (!fa->vec[0][i]->dead)
				self_event(nx, fa->vec[0][i], mask, true);
		return;
	}
	if (r->dfid.len && (k = kobj_get(nx, &r->dfid))) {
		count = subscribers(nx, k, 0);
		for (size_t i = 0; i < count; i++)
			if (!fa->vec[0][i]->dead)
				child_event(nx, fa->vec[0][i], r->mask, r->name.name, r->name.len);
	}
	if ((r->mask & FAN_DELETE) && r->fid.len && (k = kobj_find(fa, &r->fid)) && k->isdir)
		root_deleted(nx, k);
	/* A watched file (the object of the event) hears of itself. */
	if (r->fid.len && (k = kobj_find(fa, &r->fid)) && !k->isdir) {
		count = subscribers(nx, k, 1);
		for (size_t i = 0; i < count; i++)
			if (!fa->vec[1][i]->dead && !fa->vec[1][i]->parent)
				self_event(nx, fa->vec[1][i], r->mask, false);
	}
}

/* ---- moves ---- */

struct move {
	const struct kobj *from, *to;
	/* The directories' identifiers: from and to are looked up again by
	 * them (move_from, move_to), since handling one part of a move can bury
	 * a directory's last node, and with it the kobj (NULL: use from and to
	 * as they are). */
	const struct fanid *from_id, *to_id;
	const char *fname, *tname;
	size_t flen, tlen;
	bool isdir, exchange, to_isdir;
	uint32_t cookie;
	const struct fanid *fid; /* the object moved, when known */
	const struct fanid *tfid; /* an exchange: the object moved the other way */
};

/*
 * A directory listed when an event is read is listed as it is then, after
 * the events not read yet: the table can be ahead of the records read
 * after, and what it has already must not be done twice.  A FAN_RENAME
 * names both directories when both were marked when it happened (a
 * directory moved out keeps its mark while no path leads to it), so the
 * directory at one end may have been listed, with the move done, only
 * after it happened (inotify reports nothing to a watch added later).  By
 * identity: an arrival is done when the table has the object moved there
 * already, a departure when it has another directory where it left.
 */

static const struct kobj *move_from(const struct fan *fa, const struct move *m)
{
	return m->from_id ? kobj_find(fa, m->from_id) : m->from;
}

static const struct kobj *move_to(const struct fan *fa, const struct move *m)
{
	return m->to_id ? kobj_find(fa, m->to_id) : m->to;
}

/* The kobj of the directory at n/name in the table, or NULL. */
static const struct kobj *kobj_at(struct notifyx *nx, struct nx_node *n, const char *name,
				  size_t len)
{
	struct nx_node *c = nx_node_find(&nx->paths, n, name, len);

	return c && !c->dead ? c->kref : NULL;
}

/* One end of a move of object id: it left n/name (departure) or arrived
 * there.  Done already in the table? */
static bool end_done(struct notifyx *nx, struct nx_node *n, const char *name, size_t len,
		     const struct fanid *id, bool departure)
{
	const struct kobj *k = kobj_at(nx, n, name, len);

	if (!id || !k)
		return false;
	return departure ? k != kobj_find(fan_of(nx), id) : k == kobj_find(fan_of(nx), id);
}

/* Directory n was listed while the records being read were read (since
 * the kernel queue was last read dry): its listing may be ahead of them.
 * A directory that left it but has no node there (the listing found
 * something else, or nothing) may then be a file or nothing in the copy.
 * (Filesystem marks without LIST make the nodes events name instead.) */
static bool dir_unknown_at(struct notifyx *nx, struct nx_node *n, const char *name, size_t len)
{
	struct fan *fa = fan_of(nx);
	const struct kobj *k = n->kref;

	if (!k || k->listed_at != fa->epoch ||
	    nx_node_find(&nx->paths, n, name, len) ||
	    entry_path(fa, n, name, len, 2) == SIZE_MAX)
		return false;
	return !nx_excluded(nx, n->watch, fa->path[2], fa->path[2] + strlen(fa->path[2]) - len);
}

/* True when the table has an end of move m done already, or may have (in
 * some watch that sees both): the move is then done end by end. */
static bool move_done_in_part(struct notifyx *nx, const struct move *m)
{
	struct fan *fa = fan_of(nx);
	size_t nf = subscribers(nx, move_from(fa, m), 0), nt = subscribers(nx, move_to(fa, m), 1);

	for (size_t i = 0; i < nf; i++) {
		struct nx_node *a = fa->vec[0][i];
		for (size_t j = 0; j < nt; j++) {
			struct nx_node *b = fa->vec[1][j];
			if (a->dead || b->dead || a->watch != b->watch)
				continue;
			if (end_done(nx, a, m->fname, m->flen, m->fid, true) ||
			    end_done(nx, b, m->tname, m->tlen, m->fid, false))
				return true;
			if (m->exchange && (end_done(nx, b, m->tname, m->tlen, m->tfid, true) ||
					    end_done(nx, a, m->fname, m->flen, m->tfid, false)))
				return true;
			if ((m->isdir && dir_unknown_at(nx, a, m->fname, m->flen)) ||
			    (m->exchange && m->to_isdir && dir_unknown_at(nx, b, m->tname, m->tlen)))
				return true;
		}
	}
	return false;
}

static void arrived(struct nx_kt_rename *r, struct nx_node *n, const char *name, size_t len,
		    bool theirs, bool unseen)
{
	const struct move *m = r->ctx;
	struct nx_watch *w = n->watch;
	bool list = w->flags & NOTIFYX_WATCH_LIST;

	/* (With filesystem marks, listed where it arrives when LIST asks.) */
	list_moved_in(r->nx, n, name, len, theirs ? m->tfid : m->fid,
		      unseen || fs_mode(w) ? list : (w->flags & NOTIFYX_WATCH_RECURSIVE));
}

static void rename_in_watch(struct notifyx *nx, struct nx_node *a, struct nx_node *b,
			    const struct move *m)
{
	struct fan *fa = fan_of(nx);
	struct nx_kt_rename r = {
		.a = a, .b = b, .fname = m->fname, .flen = m->flen, .tname = m->tname,
		.tlen = m->tlen, .isdir = m->isdir, .to_isdir = m->to_isdir,
		.exchange = m->exchange, .scratch = { fa->path[0], fa->path[1] },
		.arrived = arrived, .bury = bury, .nx = nx, .ctx = m,
	};

	sup_take(fa, a, m->fname, m->flen);
	nx_kt_rename(&r);
}

static void do_move(struct notifyx *nx, const struct move *m)
{
	struct fan *fa = fan_of(nx);
	size_t nf = subscribers(nx, move_from(fa, m), 0), nt = subscribers(nx, move_to(fa, m), 1);
	struct nx_node **from = fa->vec[0], **to = fa->vec[1];

	for (size_t i = 0; i < nf; i++) {
		struct nx_node *a = from[i], *b = NULL;
		if (a->dead)
			continue;
		for (size_t j = 0; j < nt && !b; j++)
			if (!to[j]->dead && to[j]->watch == a->watch)
				b = to[j];
		if (b) {
			rename_in_watch(nx, a, b, m);
			continue;
		}
		size_t len = entry_path(fa, a, m->fname, m->flen, 0);
		if (len == SIZE_MAX || end_done(nx, a, m->fname, m->flen, m->fid, true))
			continue;
		sup_take(fa, a, m->fname, m->flen);
		if (m->isdir)
			bury(nx, nx_node_find(&nx->paths, a, m->fname, m->flen));
		nx_emit(nx, a->watch, NOTIFYX_MOVED_OUT, m->isdir ? NOTIFYX_EVENT_ISDIR : 0,
			nt ? m->cookie : 0, 0, fa->path[0], len, NULL, 0);
	}
	for (size_t j = 0; j < nt; j++) {
		struct nx_node *b = to[j];
		bool paired = false;
		if (b->dead)
			continue;
		for (size_t i = 0; i < nf && !paired; i++)
			paired = from[i]->watch == b->watch;
		if (paired)
			continue;
		size_t len = entry_path(fa, b, m->tname, m->tlen, 0);
		if (len == SIZE_MAX)
			too_long(nx, b);
		if (len == SIZE_MAX || end_done(nx, b, m->tname, m->tlen, m->fid, false))
			continue;
		struct nx_watch *w = b->watch;
		bury(nx, nx_node_find(&nx->paths, b, m->tname, m->tlen)); /* replaced */
		nx_emit(nx, w, NOTIFYX_MOVED_IN, m->isdir ? NOTIFYX_EVENT_ISDIR : 0,
			nf ? m->cookie : 0, 0, fa->path[0], len, NULL, 0);
		if (m->isdir && !nx_excluded(nx, w, fa->path[0], fa->path[0] + len - m->tlen))
			list_moved_in(nx, b, m->tname, m->tlen, m->fid,
				      w->flags & NOTIFYX_WATCH_LIST);
	}
}

/* A move the table has part of: each end not done yet becomes a departure
 * or an arrival (the departures first), as seen from one side only. */
static void by_ends(struct notifyx *nx, const struct move *m)
{
	struct move out = { .from = m->from, .from_id = m->from_id, .fname = m->fname,
			    .flen = m->flen, .isdir = m->isdir, .fid = m->fid };
	struct move in = { .to = m->to, .to_id = m->to_id, .tname = m->tname, .tlen = m->tlen,
			   .isdir = m->isdir, .fid = m->fid };
	struct move back_out = { .from = m->to, .from_id = m->to_id, .fname = m->tname,
				 .flen = m->tlen, .isdir = m->to_isdir, .fid = m->tfid };
	struct move back_in = { .to = m->from, .to_id = m->from_id, .tname = m->fname,
				.tlen = m->flen, .isdir = m->to_isdir, .fid = m->tfid };

	do_move(nx, &out);
	if (m->exchange)
		do_move(nx, &back_out);
	do_move(nx, &in);
	if (m->exchange)
		do_move(nx, &back_in);
}

static bool same_id(const struct fanid *a, const struct fanid *b)
{
	return a->len == b->len && (!a->len || !memcmp(a->data, b->data, a->len));
}

static bool same_name(const struct fanname *a, const struct fanname *b)
{
	return a->len == b->len && (!a->len || !memcmp(a->name, b->name, a->len));
}

/* Records looked at after a FAN_RENAME for the second half of an exchange. */
#define PAIR_WINDOW 64

/*
 * The position of the first FAN_RENAME after the one at pos (r): the
 * second half of an exchange, if it is one.  Not always the next record:
 * with filesystem marks, events of other processes on the filesystem can
 * be queued between the two halves.  fa->len when there is none in the
 * window; SIZE_MAX when buf ends before the window does.
 */
static size_t next_rename(struct fan *fa, size_t pos, const struct fanrec *r)
{
	struct fanrec x;
	size_t at = pos + r->size;

	for (int i = 0; i < PAIR_WINDOW; i++) {
		if (at >= fa->len)
			return SIZE_MAX;
		nx_fan_decode(fa->buf, fa->len, at, &x);
		if (!x.size)
			return fa->len;
		if (x.mask & FAN_RENAME)
			return at;
		at += x.size;
	}
	return fa->len;
}

/* FAN_RENAME at pos.  An exchange is two FAN_RENAMEs, the second the
 * reverse of the first for another object: the identifiers of the objects
 * moved (FAN_REPORT_TARGET_FID) tell it from a rename onto an existing name
 * followed by a rename back (the same object twice), for files too, so it is
 * reported as one RENAME with NOTIFYX_EVENT_EXCHANGE (API.md 0.2).  Returns
 * the bytes of the records used. */
static size_t rename_event(struct notifyx *nx, size_t pos, const struct fanrec *r)
{
	struct fan *fa = fan_of(nx);
	struct fanrec x;
	struct move m = {
		.fname = r->oname.name, .flen = r->oname.len,
		.tname = r->nname.name, .tlen = r->nname.len,
		.isdir = r->mask & FAN_ONDIR,
		.fid = r->fid.len ? &r->fid : NULL,
	};
	size_t used = r->size;

	/* Resolving a directory can bury nodes of the table, and with the last
	 * node of an object the object itself: from and to are looked up again
	 * by their identifiers wherever they are used. */
	m.from = r->odfid.len ? kobj_get(nx, &r->odfid) : NULL;
	m.to = r->ndfid.len ? kobj_get(nx, &r->ndfid) : NULL;
	m.from_id = m.from ? &r->odfid : NULL;
	m.to_id = m.to ? &r->ndfid : NULL;
	m.from = move_from(fa, &m);
	/* A directory moved from outside the trees into one brings what was
	 * known to be outside inside; moves elsewhere change nothing of that. */
	if ((r->mask & FAN_ONDIR) && m.to && !m.from && fa->outside.len)
		nx_map_free(&fa->outside);
	if (!++fa->cookie)
		fa->cookie = 1;

	m.cookie = fa->cookie;
	size_t xpos = next_rename(fa, pos, r);
	if (xpos < fa->len && nx_fan_decode(fa->buf, fa->len, xpos, &x) &&
	    same_id(&x.odfid, &r->ndfid) && same_id(&x.ndfid, &r->odfid) &&
	    same_name(&x.oname, &r->nname) && same_name(&x.nname, &r->oname) &&
	    r->fid.len && x.fid.len && !same_id(&r->fid, &x.fid)) {
		m.exchange = true;
		m.to_isdir = x.mask & FAN_ONDIR;
		m.tfid = &x.fid;
		if (xpos == pos + r->size)
			used += x.size;
		else
			fa->paired = xpos; /* skipped when reached */
		/* Seen from one side only, it is a departure and an arrival at one
		 * name there: the departure first. */
		if (!m.from != !m.to) {
			const struct fanid *id = m.from ? &r->odfid : &r->ndfid;
			const struct kobj *k = m.from ? m.from : m.to;
			const char *name = m.from ? m.fname : m.tname;
			size_t len = m.from ? m.flen : m.tlen;
			bool leaves = m.from ? m.isdir : m.to_isdir;
			bool arrives = m.from ? m.to_isdir : m.isdir;
			struct move out = { .from = k, .from_id = id, .fname = name, .flen = len,
					    .isdir = leaves, .fid = m.from ? m.fid : m.tfid };
			struct move in = { .to = k, .to_id = id, .tname = name, .tlen = len,
					   .isdir = arrives, .fid = m.from ? m.tfid : m.fid };
			do_move(nx, &out);
			do_move(nx, &in);
			return used;
		}
	}
	if (move_done_in_part(nx, &m))
		by_ends(nx, &m);
	else
		do_move(nx, &m);
	return used;
}

/* ---- mounts ---- */

/* A filesystem went: watches whose root was on it end with UNMOUNT; inside a
 * tree, the mount point is watched as it now is, with an OVERFLOW. */
static void check_mounts(struct notifyx *nx)
{
	struct fan *fa = fan_of(nx);
	struct pollfd p = { .fd = fa->mnt_check, .events = POLLPRI };
	struct nx_map set = { 0 };
	struct nx_node **gone = NULL;
	size_t ngone = 0, cap = 0, pos = 0;
	struct kobj *k;

	if (fa->mnt_check < 0 || poll(&p, 1, 0) <= 0 || !(p.revents & (POLLPRI | POLLERR)))
		return;
	if (!nx_mounts_read(fa->mnt_check, &set)) {
		nx_map_free(&set);
		return;
	}
	while (nx_map_next(&fa->kobjs, &pos, NULL, (void **)&k)) {
		if (!k->mnt_id || nx_map_get(&set, k->mnt_id + 1))
			continue;
		for (struct nx_node *s = k->subs; s; s = s->knext) {
			/* Only where the vanished mount begins. */
			if (s->parent && s->parent->kref &&
			    ((struct kobj *)s->parent->kref)->mnt_id == k->mnt_id)
				continue;
			if (ngone == cap) {
				cap = cap ? cap * 2 : 8;
				struct nx_node **v = realloc(gone, cap * sizeof(*v));
				if (!v)
					break;
				gone = v;
			}
			gone[ngone++] = s;
		}
	}
	/* Filesystems marked inside fsmode trees: what vanished is not listed. */
	struct nx_watch *fw_w;
	pos = 0;
	while (nx_map_next(&nx->watches, &pos, NULL, (void **)&fw_w)) {
		struct fwatch *fw = fw_w->bdata;
		for (size_t i = 1; fw && fw->fsmode && i < fw->nmarks; i++) {
			if (fw->mnts[i] && !nx_map_get(&set, fw->mnts[i] + 1)) {
				fw->mnts[i] = 0;
				nx_lost(nx, fw_w);
			}
		}
	}
	nx_map_free(&set);
	for (size_t i = 0; i < ngone; i++) {
		struct nx_node *n = gone[i];
		struct nx_watch *w = n->watch;
		if (n->dead || w->ended)
			continue;
		if (!n->parent) {
			nx_emit(nx, w, NOTIFYX_UNMOUNT, 0, 0, 0, "", 0, NULL, 0);
			nx_end_watch(nx, w);
			continue;
		}
		struct nx_node *parent = n->parent;
		char name[NAME_MAX + 1];
		size_t len = n->name_len;
		memcpy(name, n->name, len);
		bury(nx, n);
		nx_lost(nx, w);
		add_subdir(nx, parent, name, len, false, false);
	}
	free(gone);
}

/* ---- reading ---- */

/*
 * The kernel merges an unread deletion into the unread event of the same
 * object at the same name (its creation, say), ahead of the renames that
 * came between, which are never merged: an object made, exchanged away and
 * back, then deleted, would be deleted before its exchanges.  With the
 * identifiers of the objects renamed (FAN_REPORT_TARGET_FID), a deletion
 * whose object a later FAN_RENAME in buf moves comes after the last of
 * them (the object was back at that name when it went): the position
 * after which it comes, or SIZE_MAX when it comes where it is.
 */
static size_t delete_after(struct fan *fa, size_t pos, const struct fanrec *r)
{
	struct fanrec x;
	uintptr_t at;

	if (!(r->mask & FAN_DELETE) || !r->fid.len)
		return SIZE_MAX;
	while (fa->ren_indexed < fa->len) {
		bool ok = nx_fan_decode(fa->buf, fa->len, fa->ren_indexed, &x);
		if (!x.size)
			break;
		if (ok && (x.mask & FAN_RENAME) && x.fid.len)
			nx_map_put(&fa->renames, x.fid.key, (void *)(fa->ren_indexed + 1));
		fa->ren_indexed += x.size;
	}
	at = (uintptr_t)nx_map_get(&fa->renames, r->fid.key);
	if (at-- <= pos + 1 || !nx_fan_decode(fa->buf, fa->len, at, &x) || !same_id(&x.fid, &r->fid))
		return SIZE_MAX;
	return at;
}

/* Queues the deletion of the record at pos to come after the record at
 * after: false when it cannot be remembered (it then comes where it is). */
static bool defer_delete(struct fan *fa, size_t pos, size_t after)
{
	if (fa->nlate == fa->late_cap) {
		size_t cap = fa->late_cap ? 2 * fa->late_cap : 16;
		struct late *v = realloc(fa->late, cap * sizeof(*v));
		if (!v)
			return false;
		fa->late = v;
		fa->late_cap = cap;
	}
	fa->late[fa->nlate++] = (struct late){ pos, after };
	return true;
}

/* The deferred deletions whose rename was handled (all with all). */
static void late_deletes(struct notifyx *nx, size_t pos, bool all)
{
	struct fan *fa = fan_of(nx);
	struct fanrec r;
	size_t j = 0;

	for (size_t i = 0; i < fa->nlate; i++) {
		if (!all && fa->late[i].after >= pos) {
			fa->late[j++] = fa->late[i];
			continue;
		}
		if (nx_fan_decode(fa->buf, fa->len, fa->late[i].pos, &r)) {
			r.mask &= FAN_DELETE | FAN_ONDIR;
			plain_event(nx, &r);
		}
	}
	fa->nlate = j;
}

/* The last record of buf is a FAN_RENAME: the second FAN_RENAME of an
 * exchange is queued by the same system call just after the first, and a
 * read can come between the two.  True when the kernel has more within a
 * millisecond (once per record: then read it, and pair them). */
static bool second_half(struct fan *fa)
{
	struct pollfd p = { .fd = fa->fd, .events = POLLIN };

	if (fa->more)
		return true;
	if (fa->waited)
		return false;
	fa->waited = true;
	return poll(&p, 1, 1) > 0;
}

/* Handles the records in buf. */
static void handle_records(struct notifyx *nx)
{
	struct fan *fa = fan_of(nx);
	size_t pos = 0, after;
	struct fanrec r;

	nx_map_free(&fa->renames);
	fa->ren_indexed = 0;
	while (pos < fa->len) {
		bool ok = nx_fan_decode(fa->buf, fa->len, pos, &r);
		fa->next = pos + r.size;
		if (pos == fa->paired && pos) { /* handled with its first half */
			fa->paired = 0;
			pos += r.size;
			continue;
		}
		if (ok && (r.mask & FAN_RENAME) && next_rename(fa, pos, &r) == SIZE_MAX &&
		    second_half(fa))
			break; /* handled with what the next read brings */
		if (!ok) {
			/* The kernel returns whole records only: a record that
			 * does not decode is skipped by its length, or ends the
			 * batch when that length cannot be trusted. */
			pos = r.size ? pos + r.size : fa->len;
			continue;
		}
		if (r.mask & FAN_Q_OVERFLOW) {
			nx_lost_all(nx);
			pos += r.size;
		} else if (r.mask & FAN_RENAME) {
			pos += rename_event(nx, pos, &r);
		} else {
			if ((after = delete_after(fa, pos, &r)) != SIZE_MAX &&
			    defer_delete(fa, pos, after))
				r.mask &= ~(uint64_t)FAN_DELETE;
			plain_event(nx, &r);
			pos += r.size;
		}
		if (fa->nlate)
			late_deletes(nx, pos, false);
	}
	late_deletes(nx, pos, true); /* their renames wait for the next read */
	nx_map_free(&fa->renames);
	fa->paired = 0;
	consume(fa, pos);
}

static int fan_process(struct notifyx *nx, unsigned flags)
{
	struct fan *fa = fan_of(nx);
	int ret = 0, err = 0;
	bool dry = false;

	check_mounts(nx);
	for (unsigned rounds = 1;; rounds++) {
		ssize_t n = fan_read(fa, READ_BUF);
		if (n < 0) {
			ret = -1;
			err = errno;
			break;
		}
		if (!n && !fa->len) {
			if (close_mount_fds(fa))
				continue; /* read their CLOSE_NOWRITE, then be dry */
			dry = true;
			break;
		}
		handle_records(nx);
		/* A filesystem mark hears the whole filesystem: one busier than
		 * the library can follow would keep a read that finds nothing
		 * for its watches going for ever.  The descriptor stays
		 * readable; the next call goes on (API.md: an event loop never
		 * hangs in notifyx_read). */
		if ((nx->queue.count || rounds >= PROCESS_ROUNDS) && !fa->len)
			break;
	}
	/* Nothing stays open between calls (an open directory would keep its
	 * filesystem from being unmounted); not read dry, the CLOSE_NOWRITE
	 * that comes is still dropped, as the listed set lives until then. */
	close_mount_fds(fa);
	if (dry)
		dry_point(nx);
	errno = err;
	return ret;
}

/* ---- backend operations ---- */

static uint32_t fan_supported(const struct notifyx *nx)
{
	(void)nx;
	return NOTIFYX_ALL_EVENTS;
}

static int fan_open(struct notifyx *nx, const struct notifyx_config *cfg)
{
	static const unsigned modes[] = {
		FAN_REPORT_DFID_NAME | FAN_REPORT_FID | FAN_REPORT_TARGET_FID,
		FAN_REPORT_DFID_NAME | FAN_REPORT_FID,
	};
	struct fan *fa = calloc(1, sizeof(*fa));
	struct epoll_event ev = { .events = EPOLLPRI };
	int err = 0;

	if (!fa)
		return -1;
	fa->buf = mmap(NULL, READ_AHEAD_MAX, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (fa->buf == MAP_FAILED) {
		free(fa);
		errno = ENOMEM;
		return -1;
	}
	fa->fd = fa->mnt_wake = fa->mnt_check = -1;
	fa->epoch = 1;
	fa->inode_max = default_inode_max();
	/* With CAP_SYS_ADMIN the kernel queue is unlimited: a filesystem mark
	 * hears the whole filesystem, and activity outside the trees must not
	 * overflow it (the library drains it into its own queue, whose
	 * queue_max counts only events of the watches). */
	for (size_t i = 0; i < 2 * sizeof(modes) / sizeof(modes[0]) && fa->fd < 0; i++) {
		unsigned flags = modes[i / 2] | (i % 2 ? 0 : FAN_UNLIMITED_QUEUE);
		fa->fd = fanotify_init(FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK | flags,
				       O_RDONLY | O_CLOEXEC | O_LARGEFILE);
		if (fa->fd < 0 && errno != EINVAL && errno != EPERM && errno != EOPNOTSUPP)
			break;
	}
	if (fa->fd < 0) {
		err = errno == EINVAL ? ENOSYS : errno;
		goto fail;
	}
	/* FAN_RENAME is what makes moves whole: without it this backend does
	 * not start (the kernel is older than 5.17). */
	if (fanotify_mark(fa->fd, FAN_MARK_ADD | FAN_MARK_ONLYDIR, FAN_RENAME | FAN_ONDIR,
			  AT_FDCWD, "/") < 0) {
		err = errno == EINVAL ? ENOSYS : errno;
		goto fail;
	}
	fanotify_mark(fa->fd, FAN_MARK_FLUSH, 0, AT_FDCWD, NULL);
	fa->mnt_wake = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
	fa->mnt_check = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
	if (nx_epoll_add(nx, fa->fd) < 0)
		goto fail_errno;
	if (fa->mnt_wake >= 0) {
		ev.data.fd = fa->mnt_wake;
		if (epoll_ctl(nx->epfd, EPOLL_CTL_ADD, fa->mnt_wake, &ev) < 0)
			goto fail_errno;
	}
	nx->bdata = fa;
	return 0;
fail_errno:
	err = errno;
fail:
	if (fa->fd >= 0)
		close(fa->fd);
	if (fa->mnt_wake >= 0)
		close(fa->mnt_wake);
	if (fa->mnt_check >= 0)
		close(fa->mnt_check);
	munmap(fa->buf, READ_AHEAD_MAX);
	free(fa);
	errno = err;
	return -1;
}

static void free_fwatch(struct notifyx *nx, struct nx_watch *w);

static void fan_close(struct notifyx *nx)
{
	struct fan *fa = fan_of(nx);
	struct kobj *k;
	size_t pos = 0;

	/* Closing the group drops every mark at once. */
	close(fa->fd);
	fa->fd = -1;
	if (fa->mnt_wake >= 0)
		close(fa->mnt_wake);
	if (fa->mnt_check >= 0)
		close(fa->mnt_check);
	while (nx_map_next(&fa->kobjs, &pos, NULL, (void **)&k)) {
		for (struct nx_node *n = k->subs; n; n = n->knext)
			n->kref = NULL;
		free(k);
	}
	nx_map_free(&fa->kobjs);
	struct nx_watch *w;
	pos = 0;
	while (nx_map_next(&nx->watches, &pos, NULL, (void **)&w))
		free_fwatch(nx, w);
	nx_map_free(&fa->fsmarks);
	nx_map_free(&fa->outside);
	nx_map_free(&fa->suppress);
	nx_map_free(&fa->listed);
	nx_kt_free_grave(nx, &fa->graveyard);
	for (size_t i = 0; i < fa->ndeferred; i++)
		free(fa->deferred[i].name);
	free(fa->deferred);
	free(fa->vec[0]);
	free(fa->vec[1]);
	free(fa->pending);
	free(fa->late);
	nx_map_free(&fa->renames);
	munmap(fa->buf, READ_AHEAD_MAX);
	free(fa);
}

/* ---- the mark policy ----
 *
 * With CAP_SYS_ADMIN a recursive watch may use inode marks or filesystem
 * marks.  Both walk the tree at add time and keep a node per directory, so
 * their setup time and user memory are the same (bench/recursive-setup);
 * what differs is that a filesystem mark hears everything that happens on
 * the filesystem, which costs CPU for activity outside the tree (about a
 * quarter of the CPU of the process that makes it, bench/foreign), while
 * inode marks cost the kernel a mark per directory and count against
 * max_user_marks.  So: inode marks for a tree of at most inode_max
 * directories (half of max_user_marks: what is left is for the other
 * watches and programs of the user), a filesystem mark beyond, where inode
 * marks would run into the limit.  Counting stops at inode_max + 1: a large
 * tree is listed up to there twice.  NOTIFYX_FANOTIFY_INODE_MAX in the
 * environment sets inode_max (0: filesystem marks whenever allowed, as the
 * tests of filesystem marks want). */
static long default_inode_max(void)
{
	const char *env = secure_getenv("NOTIFYX_FANOTIFY_INODE_MAX");
	long marks = 0;
	FILE *f;

	if (env && *env)
		return strtol(env, NULL, 10) > 0 ? strtol(env, NULL, 10) : 0;
	if ((f = fopen("/proc/sys/fs/fanotify/max_user_marks", "re"))) {
		if (fscanf(f, "%ld", &marks) != 1)
			marks = 0;
		fclose(f);
	}
	return marks > 0 ? marks / 2 : 4096;
}

struct count {
	char **rel;    /* directories to list, relative to the root */
	size_t n, cap;
	const char *base;
	long found, max;
};

static int count_entry(void *ctx, const char *name, size_t len, unsigned char type)
{
	struct count *c = ctx;
	char *p;

	if (type != DT_DIR)
		return 0;
	if (++c->found > c->max)
		return 1;
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 64;
		char **v = realloc(c->rel, cap * sizeof(*v));

		if (!v)
			return 1;
		c->rel = v;
		c->cap = cap;
	}
	if (!(p = malloc(strlen(c->base) + len + 2)))
		return 1;
	sprintf(p, "%s%s%.*s", c->base, *c->base ? "/" : "", (int)len, name);
	c->rel[c->n++] = p;
	return 0;
}

/* True when the tree at rootfd has more than max directories (or cannot be
 * counted: the filesystem mark, as before this policy). */
static bool tree_larger(int rootfd, long max)
{
	struct count c = { .max = max, .base = "" };
	size_t i = 0;
	int fd = openat(rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	bool larger = fd < 0 || nx_scan_dir(fd, count_entry, &c, NULL) != 0;

	if (fd >= 0)
		close(fd);
	while (!larger && i < c.n) { /* breadth first: the list is the queue */
		c.base = c.rel[i++];
		fd = openat(rootfd, c.base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue; /* gone meanwhile */
		if (nx_scan_dir(fd, count_entry, &c, NULL) != 0)
			larger = true;
		close(fd);
	}
	larger = larger || c.found > max;
	for (size_t k = 0; k < c.n; k++)
		free(c.rel[k]);
	free(c.rel);
	return larger;
}

static void drop_fwatch(struct notifyx *nx, struct fwatch *fw)
{
	if (!fw)
		return;
	if (fw->fsmode)
		fan_of(nx)->nfswatches--;
	fs_unmark(nx, fw);
	if (fw->hfd >= 0)
		close(fw->hfd);
	free(fw->hname);
	free(fw->marks);
	free(fw->mnts);
	free(fw->root);
	free(fw);
}

static void free_fwatch(struct notifyx *nx, struct nx_watch *w)
{
	drop_fwatch(nx, w->bdata);
	w->bdata = NULL;
}

/* Sets up w (w->bdata NULL, w->root new) from its root, open (O_PATH) at fd:
 * what add_watch does after opening the root, and a repair again.  On
 * failure nothing of it stays. */
static int setup(struct notifyx *nx, struct nx_watch *w, int fd)
{
	struct fan *fa = fan_of(nx);
	struct stat st;
	bool deep;
	int err;

	if (!(w->bdata = calloc(1, sizeof(struct fwatch))))
		goto fail;
	((struct fwatch *)w->bdata)->hfd = -1;
	if (fstat(fd, &st) < 0)
		goto fail;
	deep = S_ISDIR(st.st_mode) && (w->flags & NOTIFYX_WATCH_RECURSIVE);
	if (deep && hold_root(nx, w, fd) < 0)
		goto fail;
	if (deep && fa->fsmode >= 0 && (fa->inode_max == 0 || tree_larger(fd, fa->inode_max))) {
		if (fs_add_watch(nx, w, fd) == 0) {
			fa->fsmode = 1;
			return 0;
		}
		if (w->ended || ((struct fwatch *)w->bdata)->fsmode ||
		    (errno != EPERM && errno != EXDEV && errno != ENODEV && errno != EINVAL &&
		     errno != EOPNOTSUPP))
			goto fail;
		/* No privilege, or a filesystem that cannot be marked whole
		 * (pseudo filesystems): inode marks, as without CAP_SYS_ADMIN. */
		if (errno == EPERM)
			fa->fsmode = -1;
	}
	if (S_ISDIR(st.st_mode)) {
		fa->path[2][0] = '\0';
		if (walk(nx, w->root, fd, ".", fa->path[2], 0, w->flags & NOTIFYX_WATCH_LIST,
			 true) == 0 && !w->ended) {
			fa->epoch++; /* listed before what is to be read happens */
			guard_root(nx, w);
			return 0;
		}
		goto fail;
	}
	if (attach(nx, w->root, fd, true) == 0)
		return 0;
fail:
	err = errno;
	bury(nx, w->root);
	w->root = NULL;
	free_fwatch(nx, w);
	errno = err;
	return -1;
}

static int fan_add_watch(struct notifyx *nx, struct nx_watch *w)
{
	int fd = open(w->abspath, O_PATH | O_CLOEXEC |
		      ((w->flags & NOTIFYX_WATCH_NOFOLLOW) ? O_NOFOLLOW : 0));
	int ret, err;

	if (fd < 0)
		return -1;
	ret = setup(nx, w, fd);
	err = errno;
	close(fd);
	errno = err;
	return ret;
}

static void fan_rm_watch(struct notifyx *nx, struct nx_watch *w)
{
	bury(nx, w->root);
	w->root = NULL;
	free_fwatch(nx, w);
}

/* ---- repair (NOTIFYX_WATCH_RESCAN) ----
 *
 * After a loss the path table is stale (directories made, renamed or
 * deleted unseen; with inode marks, new ones not marked): the watch is set
 * up again from its root, as a new watch would be.  The old tree leaves
 * the table at once (to the graveyard: records and deferrals that still
 * name its nodes skip dead ones), but its kobjs stay, marks and all, for the
 * new walk to take over: a directory still in the tree costs no mark
 * removed and added again, and is never unmarked meanwhile.  What the new
 * tree does not take left it. */

struct orphans {
	struct fan *fa;
	uint64_t *keys;
	size_t n, cap;
};

/* A node of the old tree: dead, off its kobj; a kobj left without a node
 * is remembered by key (the walk may take it, or even drop it again). */
static void orphan_one(void *ctx, struct nx_node *n)
{
	struct orphans *o = ctx;
	struct kobj *k = unsubscribe(n);

	n->dead = true;
	if (!k)
		return;
	if (o->n == o->cap) {
		size_t cap = o->cap ? 2 * o->cap : 64;
		uint64_t *v = realloc(o->keys, cap * sizeof(*v));
		if (!v) {
			drop_kobj(o->fa, k); /* its mark stays (as in detach); a walk marks again */
			return;
		}
		o->keys = v;
		o->cap = cap;
	}
	o->keys[o->n++] = k->key;
}

/* The kobjs the new tree did not take: gone (the kernel dropped the mark)
 * or moved out.  The mark of one moved out is removed by its identifier,
 * from the root's filesystem, where this process may open handles (else it
 * stays until the inode goes, as in detach). */
static void drop_orphans(struct notifyx *nx, struct orphans *o, int rootfd)
{
	struct fan *fa = fan_of(nx);
	int mfd = -2; /* not opened yet */

	for (size_t i = 0; i < o->n; i++) {
		struct kobj *k = nx_map_get(&fa->kobjs, o->keys[i]);
		int fd;
		if (!k || k->subs)
			continue;
		if (k->kmask && mfd == -2) /* a real open: see open_id; its events are listed ones */
			mfd = openat(rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK);
		if (k->kmask && mfd >= 0 && (fd = open_id(mfd, k->id, k->idlen)) >= 0) {
			unmark(nx, k, fd);
			close(fd);
		} else if (k->kmask && mfd >= 0 && errno == EPERM) {
			close(mfd);
			mfd = -1; /* no privilege: no use trying the others */
		}
		drop_kobj(fa, k);
	}
	if (mfd >= 0)
		close(mfd);
	free(o->keys);
}

/* Sets w up again, listing the tree (w->flags has LIST: the listing fills
 * the core's new model): 1; 0 for a watched file, which loses nothing. */
static int fan_repair(struct notifyx *nx, struct nx_watch *w)
{
	struct fwatch *old = w->bdata;
	struct nx_node *root = w->root;
	struct orphans o = { .fa = fan_of(nx) };
	struct stat st;
	int fd, ret = -1, err;

	if (!old || !root || !root->kref || !((struct kobj *)root->kref)->isdir)
		return 0;
	/* Through what is held: wherever the root is now (open_node checks it is
	 * still the same directory; a watch that holds nothing, not recursive,
	 * goes by its path). */
	if ((fd = open_node(nx, root)) < 0)
		return -1;
	if (fstat(fd, &st) < 0) {
		err = errno;
		close(fd);
		errno = err;
		return -1;
	}
	if (!st.st_nlink) { /* deleted, its event lost: the watch ends as it would have */
		close(fd);
		nx_emit(nx, w, NOTIFYX_DELETE_SELF, NOTIFYX_EVENT_ISDIR, 0, 0, "", 0, NULL, 0);
		nx_end_watch(nx, w);
		return 0;
	}
	nx_node_foreach(root, orphan_one, &o);
	to_graveyard(nx, root);
	w->bdata = NULL;
	if ((w->root = nx_node_new_root(w)))
		ret = setup(nx, w, fd);
	else
		errno = ENOMEM;
	err = errno;
	/* The old state goes only now: filesystem marks the new one shares
	 * stay marked throughout. */
	drop_fwatch(nx, old);
	drop_orphans(nx, &o, fd);
	close(fd);
	errno = err;
	return ret < 0 ? -1 : 1;
}

const struct nx_backend nx_backend_fanotify = {
	.name = "fanotify",
	.id = NOTIFYX_BACKEND_FANOTIFY,
	.supported = fan_supported,
	.open = fan_open,
	.close = fan_close,
	.add_watch = fan_add_watch,
	.rm_watch = fan_rm_watch,
	.process = fan_process,
	.repair = fan_repair,
};
