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

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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

/* ---- identifiers ---- */

/* The identifier of the object open at fd, as fanotify reports it.  ENODEV
 * when the filesystem has no file handles or a zero fsid. */
int nx_fan_fd_id(int fd, unsigned char *id, size_t *len, uint64_t *mnt_id)
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
	if (mnt_id) /* the mount id statx(STATX_MNT_ID) gives, one call fewer */
		*mnt_id = (uint64_t)(unsigned)mnt;
	return 0;
}

struct kobj *nx_fan_kobj_find(const struct fan *fa, const struct fanid *id)
{
	struct kobj *k;

	if (!id->len || !(k = nx_map_get(&fa->kobjs, id->key)))
		return NULL;
	return k->idlen == id->len && !memcmp(k->id, id->data, id->len) ? k : NULL;
}

struct kobj *nx_fan_kobj_new(struct fan *fa, const struct fanid *id, bool isdir)
{
	struct kobj *k = calloc(1, offsetof(struct kobj, id) + id->len);

	if (!k || nx_map_put(&fa->kobjs, id->key, k) < 0) {
		free(k);
		errno = ENOMEM;
		return NULL;
	}
	k->key = id->key;
	k->idlen = (uint16_t)id->len;
	memcpy(k->id, id->data, id->len);
	k->isdir = isdir;
	return k;
}

void nx_fan_drop_kobj(struct fan *fa, struct kobj *k)
{
	nx_map_del(&fa->kobjs, k->key);
	free(k);
}

uint64_t nx_fan_mnt_of(int fd)
{
	struct statx stx;

	if (statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &stx) < 0 || !(stx.stx_mask & STATX_MNT_ID))
		return 0;
	return stx.stx_mnt_id;
}

/* ---- marks ---- */

static uint64_t node_mask(const struct nx_node *n, bool isdir)
{
	const struct nx_watch *w = nx_node_watch(n);
	uint64_t m = nx_fan_mask(w->events);

	if (!isdir)
		return (m & ~(FAN_CREATE | FAN_DELETE | FAN_RENAME)) | FAN_DELETE_SELF;
	/* To keep the tree up to date (not recursive: the names of the child
	 * directories, whose own events come without one). */
	m |= FAN_CREATE | FAN_DELETE | FAN_RENAME;
	if (n->parent) /* a directory's own end is reported by its parent */
		m &= ~(FAN_DELETE_SELF | FAN_MOVE_SELF);
	else /* the watch ends with it; its guard follows it (nx_fan_guard_root) */
		m |= FAN_DELETE_SELF | FAN_MOVE_SELF;
	return m | FAN_ONDIR | FAN_EVENT_ON_CHILD;
}

/* fanotify_mark() on the object open at fd.  The kernel takes no O_PATH
 * descriptor there, so those are given as their /proc/self/fd link (which
 * leads to the object itself, a symbolic link included). */
int nx_fan_mark_fd(struct fan *fa, unsigned flags, uint64_t mask, int fd)
{
	char kpath[32];

	if (fanotify_mark(fa->fd, flags, mask, fd, NULL) == 0)
		return 0;
	if (errno != EBADF)
		return -1;
	snprintf(kpath, sizeof(kpath), "/proc/self/fd/%d", fd);
	return fanotify_mark(fa->fd, flags, mask, AT_FDCWD, kpath);
}

uint64_t nx_fan_place_key(uint64_t obj, const struct nx_node *n, const char *name, size_t len)
{
	const struct kobj *d = n->kref;

	return nx_hash(name, len, obj ^ (d ? d->key * 31 : 0)) | 1;
}

/* Directory node n, which a listing may have reported, leaves the table
 * without an event: fan->stale. */
static void stale_place(struct fan *fa, const struct nx_node *n)
{
	if (n->parent)
		nx_map_put(&fa->stale,
			   nx_fan_place_key(0, n->parent, nx_node_name(n), nx_node_name_len(n)),
			   (void *)1);
}

/* Subscribes node n to the object open at fd, and with NX_FAN_MARK marks
 * it.  A directory that n's watch has at another place is taken from there
 * (the events read so far lag behind the filesystem); with NX_FAN_STAY it
 * stays there and attaching fails with ELOOP. */
int nx_fan_attach(struct notifyx *nx, struct nx_node *n, int fd, unsigned how)
{
	struct fan *fa = fan_of(nx);
	unsigned char id[ID_MAX];
	struct fanid fid;
	struct kobj *k;
	struct stat st;
	uint64_t mnt_id;
	size_t len;
	bool fresh = false;

	if (fstat(fd, &st) < 0 || nx_fan_fd_id(fd, id, &len, &mnt_id) < 0)
		return -1;
	fid.data = id;
	fid.len = len;
	fid.key = nx_fan_key(id, len);
again:
	fresh = false;
	if (!(k = nx_fan_kobj_find(fa, &fid))) {
		if (nx_map_get(&fa->kobjs, fid.key)) {
			errno = ENOSPC; /* a 64-bit hash collision: never seen, but not wrong */
			return -1;
		}
		if (!(k = nx_fan_kobj_new(fa, &fid, S_ISDIR(st.st_mode))))
			return -1;
		k->mnt_id = mnt_id;
		fresh = true;
	}
	uint64_t want = how & NX_FAN_MARK ? node_mask(n, k->isdir) : 0;
	if (want & ~k->kmask) {
		if (nx_fan_mark_fd(fa, FAN_MARK_ADD, k->kmask | want, fd) < 0) {
			int err = errno;
			if (err == EOPNOTSUPP || err == EXDEV)
				err = ENODEV;
			if (fresh)
				nx_fan_drop_kobj(fa, k);
			errno = err;
			return -1;
		}
		k->kmask |= want;
	}
	if (n->kref == k)
		return 0; /* subscribed already (a listing after a filesystem mark) */
	if (n->kref)
		nx_fan_detach(nx, n);
	/* A directory the watch knows already at another place: the events
	 * read so far lag behind the filesystem; the old place is stale.
	 * Unless that place is above n: a listing made after the directory
	 * moved below itself, as the events read so far have it (ELOOP). */
	struct nx_node *s;

	for (size_t si = 0; (s = nx_subs_get(k->subs, si)); si++) {
		if (nx_node_watch(s) == nx_node_watch(n) && s != n &&
		    (nx_within(n, s) || ((how & NX_FAN_STAY) && s->parent))) {
			errno = ELOOP;
			return -1;
		}
	}
	for (size_t si = 0; (s = nx_subs_get(k->subs, si)); si++) {
		if (nx_node_watch(s) == nx_node_watch(n) && !nx_within(n, s) && s->parent) {
			stale_place(fa, s);
			nx_fan_bury(nx, s);
			if (!nx_fan_kobj_find(fa, &fid))
				goto again; /* it was the last node of k, which went with it */
			break;
		}
	}
	if (nx_subs_add(&k->subs, n) < 0)
		return -1;
	n->kref = k;
	return 0;
}

/* Opens node n's directory (name NULL), or its entry name, from the held
 * root of its watch, with open(2) flags; ENAMETOOLONG when its path does
 * not fit. */
static int open_below(struct notifyx *nx, const struct nx_node *n, const char *name,
		      size_t nlen, int flags)
{
	const struct fwatch *fw = nx_node_watch(n)->bdata;
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
int nx_fan_open_node(struct notifyx *nx, struct nx_node *n)
{
	struct kobj *k = n->kref;
	unsigned char id[ID_MAX];
	size_t len;
	int fd;

	if (!k) {
		errno = ESTALE;
		return -1;
	}
	if (!nx_node_watch(n)->bdata || ((const struct fwatch *)nx_node_watch(n)->bdata)->hfd < 0)
		fd = open(nx_node_watch(n)->abspath, O_PATH | O_CLOEXEC |
			  ((nx_node_watch(n)->flags & NOTIFYX_WATCH_NOFOLLOW) ? O_NOFOLLOW : 0));
	else
		fd = open_below(nx, n, NULL, 0, O_PATH);
	if (fd < 0)
		return -1;
	if (nx_fan_fd_id(fd, id, &len, NULL) < 0) {
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
 * deletion (see nx_fan_guard_root). */
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
void nx_fan_unmark(struct notifyx *nx, const struct kobj *k, int fd)
{
	uint64_t keep = guarded(nx, k->key) ? FAN_DELETE | FAN_ONDIR : 0;

	nx_fan_mark_fd(fan_of(nx), FAN_MARK_REMOVE, k->kmask & ~keep, fd);
}

/* Takes n off the nodes of its kobj: returns the kobj when n was its last
 * node (it is then to be dropped), else NULL. */
struct kobj *nx_fan_unsubscribe(struct nx_node *n)
{
	struct kobj *k = n->kref;

	if (!k)
		return NULL;
	nx_subs_del(&k->subs, n);
	n->kref = NULL;
	return k->subs ? NULL : k;
}

/* The mark of k goes when its last node goes (but for what a guard needs).
 * The kernel needs the object to remove a mark: reached by the node's path,
 * checked by its identifier.  When the object cannot be reached any more
 * (moved away, or deleted, which removes the mark itself), the mark stays
 * until the inode goes; its events then match no kobj and are dropped. */
void nx_fan_detach(struct notifyx *nx, struct nx_node *n)
{
	struct kobj *k = n->kref;

	if (k && k->subs == (nx_subs)n && k->kmask && !nx->forked) { /* its only node */
		int fd = nx_fan_open_node(nx, n);
		if (fd >= 0) {
			nx_fan_unmark(nx, k, fd);
			close(fd);
		}
	}
	if ((k = nx_fan_unsubscribe(n)))
		nx_fan_drop_kobj(fan_of(nx), k);
}

static void bury_one(void *ctx, struct nx_node *n)
{
	nx_fan_detach(ctx, n);
}

/* n, dead with its subtree, leaves the tree; freed after the current batch
 * (records and deferrals may still name its nodes: they skip dead ones). */
void nx_fan_to_graveyard(struct notifyx *nx, struct nx_node *n)
{
	struct fan *fa = fan_of(nx);

	nx_node_unlink(&nx->paths, n);
	n->next = fa->graveyard;
	fa->graveyard = n;
}

/* Takes n and its subtree out of the tree (marks first, while paths still
 * lead to them). */
void nx_fan_bury(struct notifyx *nx, struct nx_node *n)
{
	nx_kt_bury(nx, n, bury_one, nx, &fan_of(nx)->graveyard);
}

/* ---- CREATEs a listing reported already ---- */

bool nx_fan_sup_take(struct fan *fa, const void *node, const char *name, size_t len)
{
	return nx_kt_take(&fa->suppress, nx_kt_key(node, name, len, 0));
}

/* The path of n's entry name, relative to the watch root, in fa->path[i]. */
size_t nx_fan_entry_path(struct fan *fa, const struct nx_node *n, const char *name, size_t nlen,
			 int i)
{
	return nx_kt_entry_path(fa->path[i], n, name, nlen);
}

void nx_fan_too_long(struct notifyx *nx, struct nx_node *n)
{
	nx_kt_too_long(nx, n, fan_of(nx)->path[2]);
}

/* ---- walking directories ---- */

bool nx_fan_fs_mode(const struct nx_watch *w)
{
	const struct fwatch *fw = w->bdata;

	return fw && fw->fsmode;
}

/*
 * A recursive watch with filesystem marks that neither lists (LIST) nor
 * repairs (RESCAN) does not walk its tree: the filesystem mark hears all of
 * it already, and a directory becomes a node when an event first names it
 * (resolve() in fanotify-fs.c), so that it is ready at once on a tree of
 * any size and its memory grows with the directories events name.  A
 * directory deleted (or moved away) before its events are read is placed
 * by the records that follow: its deletion or rename names it by
 * identifier (FAN_REPORT_TARGET_FID) with its parent and name.  A watch
 * that lists walks, as its listing must anyway, and its table is made of
 * listings (see resolve()).
 */
bool nx_fan_lazy(const struct nx_watch *w)
{
	const struct fwatch *fw = w->bdata;

	return fw && fw->lazy;
}

static int open_dir(struct notifyx *nx, const struct nx_node *n, int pfd, const char *name)
{
	int flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK;

	if (n->parent || (nx_node_watch(n)->flags & NOTIFYX_WATCH_NOFOLLOW))
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
	if (fd < 0 || nx_fan_attach(nx, c, fd, 0) < 0)
		nx_fan_bury(nx, c); /* its own events are not named: at worst they are missed */
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
	struct nx_watch *w = nx_node_watch(n);
	struct kobj *k;
	int fd, err;

	(void)rel; /* (open_dir reaches the root's descendants through the held root) */
	if ((fd = open_dir(nx, n, pfd, name)) < 0) {
		err = errno;
		stale_place(fa, n); /* nx_kt_walk buries it */
		errno = err;
		return -1;
	}
	if (nx_kt_other_dev(n, fd)) {
		close(fd);
		nx_fan_bury(nx, n);
		return NX_KT_SKIP;
	}
	/* With a filesystem mark, which hears every move, a directory the
	 * watch has at another place is one this listing found ahead of the
	 * events: those that moved it are still to be read, and they move it
	 * in the table; it is not listed at n meanwhile (a copy would have it
	 * twice, where the events put it, with what it held then, and at n).
	 * Inode marks hear nothing of a directory's moves between directories
	 * they have not marked yet: they take it from where the table has it. */
	unsigned how = !nx_fan_fs_mode(w) ? NX_FAN_MARK : n->parent ? NX_FAN_STAY : 0;
	if (nx_fan_attach(nx, n, fd, how) < 0) {
		err = errno;
		stale_place(fa, n); /* (reported, as a directory: see move_done_in_part) */
		close(fd);
		errno = err;
		return -1;
	}
	k = n->kref;
	/* The listing's OPEN, ACCESS and CLOSE_NOWRITE are the library's own. */
	nx_map_put(&fa->listed, k->key, (void *)1);
	k->listed_at = fa->epoch;
	k->arrived = !wk->fatal;
	/* Filesystem marks: placed by the listing, as inode marks place what
	 * they list (the table is then ahead of the events not read yet, which
	 * the moves' checks by identity allow for). */
	if (nx_fan_fs_mode(w))
		k->gen = fa->fsgen;
	return fd;
}

/* A filesystem below the root that cannot be marked (ENODEV) is one
 * directory's failure, an ERROR; with filesystem marks, fs_mark_submounts()
 * reported it already. */
static bool quiet(struct nx_kt_walk *wk, struct nx_node *n, int err)
{
	(void)wk;
	return err == ENODEV && n->parent && nx_fan_fs_mode(nx_node_watch(n));
}

/*
 * Marks directory name (relative to pfd, the directory of n's parent, or by
 * path when pfd is -1), which is node n, then lists it and does the same for
 * its subdirectories (recursive watches) or names them (others): see
 * nx_kt_walk.
 */
int nx_fan_walk(struct notifyx *nx, struct nx_node *n, int pfd, const char *name, char *rel,
		size_t rel_len, bool report, bool fatal)
{
	struct fan *fa = fan_of(nx);
	struct nx_kt_walk wk = { .nx = nx, .report = report, .fatal = fatal,
				 .reported = &fa->suppress, .made_from = fa->repair_from,
				 .scratch = fa->path[1],
				 .enter = enter, .shallow = shallow, .quiet = quiet,
				 .bury = nx_fan_bury };

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
			nx_lost(nx, nx_node_watch(n));
			return;
		}
		fa->deferred = v;
		fa->deferred_cap = cap;
	}
	struct deferred *d = &fa->deferred[fa->ndeferred];
	if (!(d->name = strndup(name, nlen))) {
		nx_lost(nx, nx_node_watch(n));
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
	size_t len = nx_fan_entry_path(fa, n, name, nlen, 2);
	struct nx_node *c;

	if (len == SIZE_MAX)
		nx_fan_too_long(nx, n);
	else if (!(c = nx_node_add(&nx->paths, n, name, nlen)))
		nx_lost(nx, nx_node_watch(n));
	else if (nx_fan_walk(nx, c, fd, dname ? dname : nx_node_name(c), fa->path[2], len, report,
			     false) < 0)
		nx_lost(nx, nx_node_watch(n));
}

/* A directory arrived at n/name: mark and list it (or only name it). */
void nx_fan_add_subdir(struct notifyx *nx, struct nx_node *n, const char *name, size_t nlen,
		       bool report, bool retry)
{
	struct nx_watch *w = nx_node_watch(n);
	int pfd;

	if (w->ended || n->dead || nx_node_find(&nx->paths, n, name, nlen))
		return;
	if ((pfd = nx_fan_open_node(nx, n)) < 0) {
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


/* Directory id arrived at n/name (moved in, or renamed from a place the
 * table did not know): its directories become nodes, and with report its
 * entries are listed.  With filesystem marks it is found by its identifier,
 * since events not read yet may have moved it, and listed as it is now,
 * under the name the event gives. */
void nx_fan_list_moved_in(struct notifyx *nx, struct nx_node *n, const char *name, size_t nlen,
			  const struct fanid *id, bool report)
{
	struct fan *fa = fan_of(nx);
	struct fsmark *fm = id && id->len >= 16 ? nx_fan_fsmark_of(fa, id->data) : NULL;
	struct nx_watch *w = nx_node_watch(n);
	int fd;

	if (!fm) {
		nx_fan_add_subdir(nx, n, name, nlen, report, true);
		return;
	}
	if (w->ended || n->dead || nx_node_find(&nx->paths, n, name, nlen))
		return;
	if (nx_fan_lazy(w)) { /* named, not walked: what is below it comes on demand */
		nx_fan_node_by_id(nx, n, name, nlen, id);
		return;
	}
	if ((fd = nx_fan_open_handle(fa, fm, id->data, id->len)) < 0) {
		/* Gone (then events to come say so, and its path leads nowhere
		 * too): by its path, at worst late. */
		if (errno == ESTALE)
			nx_fan_add_subdir(nx, n, name, nlen, report, true);
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
		if (!node->dead && !nx_node_watch(node)->ended)
			nx_fan_add_subdir(nx, node, v[i].name, strlen(v[i].name), v[i].report,
					  false);
		free(v[i].name);
	}
	free(v);
}

/* The kernel queue was read dry. */
void nx_fan_dry_point(struct notifyx *nx)
{
	struct fan *fa = fan_of(nx);

	nx_map_free(&fa->suppress);
	nx_map_free(&fa->listed);
	nx_map_free(&fa->skipped);
	nx_map_free(&fa->unlisted);
	nx_map_free(&fa->stale);
	fa->epoch++; /* what was listed before is not ahead of what comes */
	if (fa->ndeferred)
		retry_deferred(nx);
	if (!fa->suppress.len)
		nx_kt_free_grave(nx, &fa->graveyard);
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
	fa->cur = UINT64_MAX; /* no record is being handled */
	fa->inode_max = nx_fan_default_inode_max();
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
		struct nx_node *n;

		for (size_t si = 0; (n = nx_subs_get(k->subs, si)); si++)
			n->kref = NULL;
		nx_subs_free(&k->subs);
		free(k);
	}
	nx_map_free(&fa->kobjs);
	struct nx_watch *w;
	pos = 0;
	while (nx_map_next(&nx->watches, &pos, NULL, (void **)&w))
		nx_fan_free_fwatch(nx, w);
	nx_map_free(&fa->fsmarks);
	nx_map_free(&fa->outside);
	nx_map_free(&fa->lazy_outside);
	nx_map_free(&fa->suppress);
	nx_map_free(&fa->listed);
	nx_map_free(&fa->skipped);
	nx_map_free(&fa->unlisted);
	nx_map_free(&fa->stale);
	nx_kt_free_grave(nx, &fa->graveyard);
	for (size_t i = 0; i < fa->ndeferred; i++)
		free(fa->deferred[i].name);
	free(fa->deferred);
	free(fa->vec[0]);
	free(fa->vec[1]);
	free(fa->pending);
	for (size_t i = 0; i < fa->nlate; i++)
		free(fa->late[i].rec);
	free(fa->late);
	nx_map_free(&fa->renames);
	munmap(fa->buf, READ_AHEAD_MAX);
	free(fa);
}

const struct nx_backend nx_backend_fanotify = {
	.name = "fanotify",
	.id = NOTIFYX_BACKEND_FANOTIFY,
	.supported = fan_supported,
	.open = fan_open,
	.close = fan_close,
	.add_watch = nx_fan_add_watch,
	.rm_watch = nx_fan_rm_watch,
	.process = nx_fan_process,
	.repair = nx_fan_repair,
};
