/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The inotify backend.
 *
 * The kernel merges watches per inode, so user watches are multiplexed onto
 * kernel watches ("kwatches"): each directory node of a watch (nx_node) is a
 * subscriber of the kwatch of its inode, and each kernel event is dispatched
 * to every subscriber, which applies its own watch's rules.
 *
 * Recursive watches keep one kwatch per directory.  A directory that appears
 * is watched first and listed second, so nothing created inside it is missed;
 * CREATEs the kernel also reports for entries the listing found are dropped
 * (the "suppress" table, kept for two generations of at least SUP_KEEP_NS;
 * inotify-tree.c).
 *
 * The two halves of a move are paired by cookie (inotify-move.c).  A MOVED_FROM
 * whose MOVED_TO is not there is held (inotify-hold.c): for at most NX_HOLD_NS from
 * the moment it was read (a timerfd in the handle's epoll set ends the
 * wait), and no longer once HOLD_DISTANCE later records have been read.
 * Only the events of the watches it concerns wait behind it.
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
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "inotify-int.h"
#include "scan.h"
#include "treepath.h"

/* ---- decoding (pure: no system call) ---- */

bool nx_inotify_decode(const char *buf, size_t len, size_t pos, struct inrec *r)
{
	struct inotify_event ev;

	if (pos > len || len - pos < sizeof(ev))
		return false;
	memcpy(&ev, buf + pos, sizeof(ev));
	if (ev.len > len - pos - sizeof(ev))
		return false;
	r->wd = ev.wd;
	r->mask = ev.mask;
	r->cookie = ev.cookie;
	r->name = buf + pos + sizeof(ev);
	r->name_len = strnlen(r->name, ev.len);
	r->size = sizeof(ev) + ev.len;
	return true;
}

/* ---- masks ---- */

static const struct {
	uint32_t nx, in;
} xlat[] = {
	{ NOTIFYX_ACCESS, IN_ACCESS },
	{ NOTIFYX_MODIFY, IN_MODIFY },
	{ NOTIFYX_ATTRIB, IN_ATTRIB },
	{ NOTIFYX_CLOSE_WRITE, IN_CLOSE_WRITE },
	{ NOTIFYX_CLOSE_NOWRITE, IN_CLOSE_NOWRITE },
	{ NOTIFYX_OPEN, IN_OPEN },
	{ NOTIFYX_CREATE, IN_CREATE },
	{ NOTIFYX_DELETE, IN_DELETE },
	{ NOTIFYX_RENAME, IN_MOVED_FROM | IN_MOVED_TO },
	{ NOTIFYX_MOVED_OUT, IN_MOVED_FROM | IN_MOVED_TO },
	{ NOTIFYX_MOVED_IN, IN_MOVED_FROM | IN_MOVED_TO },
	{ NOTIFYX_DELETE_SELF, IN_DELETE_SELF },
	{ NOTIFYX_MOVE_SELF, IN_MOVE_SELF },
};

uint32_t nx_inotify_mask(uint32_t events)
{
	uint32_t m = 0;

	for (size_t i = 0; i < sizeof(xlat) / sizeof(xlat[0]); i++)
		if (events & xlat[i].nx)
			m |= xlat[i].in;
	return m;
}

/* The single NOTIFYX type of a plain (non-move) kernel event, or 0. */
uint32_t nx_inotify_event(uint32_t mask)
{
	for (size_t i = 0; i < sizeof(xlat) / sizeof(xlat[0]); i++)
		if ((mask & xlat[i].in) && !(xlat[i].in & (IN_MOVED_FROM | IN_MOVED_TO)))
			return xlat[i].nx;
	return 0;
}

uint32_t nx_ino_node_mask(const struct nx_node *n)
{
	const struct nx_watch *w = nx_node_watch(n);
	uint32_t m = nx_inotify_mask(w->events) | IN_EXCL_UNLINK;

	if (w->flags & NOTIFYX_WATCH_RECURSIVE) /* to keep the tree up to date */
		m |= IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO;
	if (n->parent) /* a directory's own events come through its parent */
		m &= ~(IN_DELETE_SELF | IN_MOVE_SELF);
	/* The root: to follow it (see guard()); the others: to tell a
	 * directory that arrives where the table has it already (see
	 * arrived_known()). */
	if (w->flags & NOTIFYX_WATCH_RECURSIVE)
		m |= IN_MOVE_SELF;
	return m;
}

/* ---- dispatching kernel events ---- */

/* The record being handled was queued before a repair of n's watch read
 * the tree again (ino_repair): what it says is in that reading already, and
 * the table it was queued for is gone. */
static bool stale(const void *ctx, const struct nx_node *n)
{
	const struct ino *in = ctx;
	const struct iwatch *iw = iw_of(nx_node_watch(n));

	return iw && in->cur < iw->since;
}

/* Copies the live subscribers of kw into scratch list i. */
size_t nx_ino_subscribers(struct notifyx *nx, const struct kwatch *kw, int i)
{
	struct ino *in = ino_of(nx);

	return nx_kt_subscribers(nx, kw ? kw->subs : 0, stale, in, &in->vec[i], &in->vec_cap[i]);
}

/* The filesystem mounted at directory node n (not a root) went: the mount
 * point is watched as it now is, and what vanished is not listed. */
static void uncover(struct notifyx *nx, struct nx_node *n)
{
	struct ino *in = ino_of(nx);
	struct nx_watch *w = nx_node_watch(n);
	int rfd = nx_ino_open_node(nx, w->root), pfd;
	size_t len;

	while (n->child)
		nx_ino_bury(nx, n->child);
	nx_ino_detach(in, n);
	nx_map_del(&in->mounts, (uint64_t)(uintptr_t)n);
	if (rfd < 0)
		return; /* the root's own filesystem went: UNMOUNT follows */
	close(rfd);
	len = nx_node_path(n, in->path[2], PATH_MAX);
	if (len != SIZE_MAX && (pfd = nx_ino_open_node(nx, n->parent)) >= 0) {
		nx_ino_walk(nx, n, pfd, nx_node_name(n), in->path[2], len, false, false);
		close(pfd);
	}
	nx_lost(nx, w);
}

static void self_event(struct notifyx *nx, struct nx_node *n, uint32_t mask)
{
	struct nx_watch *w = nx_node_watch(n);
	const struct iwatch *iw = iw_of(w);
	/* The kernel does not set IN_ISDIR on IN_DELETE_SELF and IN_MOVE_SELF. */
	uint32_t flags = (mask & IN_ISDIR) || (iw && iw->isdir) ? NOTIFYX_EVENT_ISDIR : 0;

	if (n->parent) {
		/* A directory inside a tree: its parent reports it by name.  An
		 * unmounted filesystem below the root uncovers its mount point. */
		if (mask & IN_UNMOUNT)
			uncover(nx, n);
		return;
	}
	if (mask & IN_UNMOUNT) {
		nx_emit(nx, w, NOTIFYX_UNMOUNT, 0, 0, 0, "", 0, NULL, 0);
		nx_end_watch(nx, w);
	} else if (mask & IN_DELETE_SELF) {
		nx_emit(nx, w, NOTIFYX_DELETE_SELF, flags, 0, 0, "", 0, NULL, 0);
		nx_end_watch(nx, w);
	} else if (mask & IN_MOVE_SELF) {
		nx_emit(nx, w, NOTIFYX_MOVE_SELF, flags, 0, 0, "", 0, NULL, 0);
		/* (A ONESHOT watch ended in nx_emit: its state is gone.) */
		if (!w->ended && (iw = iw_of(w)) && iw->rootfd >= 0)
			nx_ino_guard(nx, w, false); /* its parent changed */
	} else if (nx_inotify_event(mask)) {
		nx_emit(nx, w, nx_inotify_event(mask), flags, 0, 0, "", 0, NULL, 0);
	}
}

/* A filesystem left the mount table (umount -l while busy gives no
 * IN_UNMOUNT: the kernel sends it when the filesystem is shut down, which a
 * descriptor held anywhere, the library's own included, puts off): a root
 * on it ends with UNMOUNT, a mount inside a tree is uncovered. */
void nx_ino_check_mounts(struct notifyx *nx)
{
	struct ino *in = ino_of(nx);
	struct pollfd p = { .fd = in->mnt_check, .events = POLLPRI };
	struct nx_map set = { 0 };
	struct nx_watch *w;
	size_t pos = 0;

	if (in->mnt_check < 0 || poll(&p, 1, 0) <= 0 || !(p.revents & (POLLPRI | POLLERR)))
		return;
	if (!nx_mounts_read(in->mnt_check, &set)) {
		nx_map_free(&set);
		return;
	}
	while (nx_map_next(&nx->watches, &pos, NULL, (void **)&w)) {
		struct iwatch *iw = iw_of(w);
		if (w->ended || !iw || !iw->mnt_id || nx_map_get(&set, iw->mnt_id + 1))
			continue;
		nx_emit(nx, w, NOTIFYX_UNMOUNT, 0, 0, 0, "", 0, NULL, 0);
		nx_end_watch(nx, w);
	}
	/* Mounts inside trees: collected first, as uncovering changes the map. */
	struct nx_node **gone = NULL, *n;
	size_t ngone = 0, cap = 0;
	uint64_t key;
	void *id;
	for (pos = 0; nx_map_next(&in->mounts, &pos, &key, &id);) {
		if (nx_map_get(&set, (uint64_t)(uintptr_t)id + 1))
			continue;
		if (ngone == cap) {
			struct nx_node **v = realloc(gone, (cap = cap ? cap * 2 : 8) * sizeof(*v));
			if (!v)
				break; /* seen at the next change of the mount table */
			gone = v;
		}
		gone[ngone++] = (struct nx_node *)(uintptr_t)key;
	}
	nx_map_free(&set);
	for (size_t i = 0; i < ngone; i++)
		if (!(n = gone[i])->dead && !nx_node_watch(n)->ended)
			uncover(nx, n);
	free(gone);
}

static void child_event(struct notifyx *nx, struct nx_node *n, const struct inrec *r)
{
	struct ino *in = ino_of(nx);
	struct nx_watch *w = nx_node_watch(n);
	bool isdir = r->mask & IN_ISDIR;
	uint32_t flags = isdir ? NOTIFYX_EVENT_ISDIR : 0;
	const char *path = r->name;
	size_t len = r->name_len;

	/* The path of an entry of a root is its name, used where the kernel
	 * put it (ended by a NUL within the record): nothing to build. */
	if (n->parent || r->size == sizeof(struct inotify_event) + len) {
		path = in->path[0];
		len = nx_ino_entry_path(in, n, r->name, r->name_len, 0);
	}
	if (len == SIZE_MAX) {
		nx_ino_too_long(nx, n);
		return;
	}
	if (r->mask & IN_CREATE) {
		if (nx_ino_sup_take(in, n, r->name, r->name_len, SUP_CREATE))
			return; /* a listing reported it already */
		nx_emit(nx, w, NOTIFYX_CREATE, flags, 0, 0, path, len, NULL, 0);
		if (isdir && !nx_excluded(nx, w, path, r->name))
			nx_ino_add_subdir(nx, n, r->name, r->name_len, true);
	} else if (r->mask & IN_DELETE) {
		nx_ino_sup_take(in, n, r->name, r->name_len, SUP_CREATE);
		nx_emit(nx, w, NOTIFYX_DELETE, flags, 0, 0, path, len, NULL, 0);
		if (isdir)
			nx_ino_bury(nx, nx_node_find(&nx->paths, n, r->name, r->name_len));
	} else if (nx_inotify_event(r->mask)) {
		nx_emit(nx, w, nx_inotify_event(r->mask), flags, 0, 0, path, len, NULL, 0);
	}
}

/* The library's own listing opened or read this directory. */
static bool own_access(struct ino *in, const struct kwatch *kw, const struct inrec *r)
{
	int kind = (r->mask & IN_OPEN) ? SUP_OPEN : (r->mask & IN_ACCESS) ? SUP_ACCESS
		 : (r->mask & IN_CLOSE_NOWRITE) ? SUP_CLOSE : 0;

	return kind && (r->mask & IN_ISDIR) && nx_ino_sup_take(in, kw, r->name, r->name_len, kind);
}

void nx_ino_plain_event(struct notifyx *nx, const struct inrec *r)
{
	struct ino *in = ino_of(nx);
	struct kwatch *kw = nx_ino_kwatch(in, r->wd);
	size_t count;

	if (!kw || own_access(in, kw, r))
		return;
	if (r->mask & IN_IGNORED) {
		/* The kernel dropped this watch (its inode is gone). */
		count = nx_ino_subscribers(nx, kw, 0);
		for (size_t i = 0; i < count; i++) {
			struct nx_node *n = in->vec[0][i];
			if (n->dead)
				continue;
			nx_ino_detach(in, n);
			if (!n->parent)
				nx_end_watch(nx, nx_node_watch(n));
		}
		/* The parent of held roots went (they were moved out of it
		 * first): guard them where they are now. */
		struct nx_watch *w;
		while ((w = nx_map_get(&in->guards, (uint64_t)r->wd)))
			nx_ino_guard(nx, w, false);
		return;
	}
	count = nx_ino_subscribers(nx, kw, 0);
	for (size_t i = 0; i < count; i++) {
		struct nx_node *n = in->vec[0][i];
		if (n->dead)
			continue;
		if (r->name_len)
			child_event(nx, n, r);
		else
			self_event(nx, n, r->mask);
	}
	/* A directory went from the parent of held roots: theirs?  (Ending a
	 * watch unguards it, which may free kw: look it up again.) */
	for (bool again = (r->mask & IN_DELETE) && (r->mask & IN_ISDIR); again;) {
		struct nx_watch *w;
		again = false;
		for (w = nx_map_get(&in->guards, (uint64_t)r->wd); w && !(again = nx_ino_check_root(nx, w));)
			w = iw_of(w)->gnext;
	}
}

/* ---- backend operations ---- */

static uint32_t ino_supported(const struct notifyx *nx)
{
	return NOTIFYX_ALL_EVENTS;
}

static int ino_open(struct notifyx *nx, const struct notifyx_config *cfg)
{
	struct ino *in = calloc(1, sizeof(*in));
	struct epoll_event ev = { .events = EPOLLPRI };

	if (!in)
		return -1;
	in->proc_fd = true;
	in->timerfd = -1;
	in->sync_fd = -1;
	in->fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	/* Without them a lazy unmount is seen only when the kernel reports it. */
	in->mnt_wake = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
	in->mnt_check = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
	ev.data.fd = in->mnt_wake;
	if (in->fd < 0 || (in->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK)) < 0 ||
	    nx_epoll_add(nx, in->fd) < 0 || nx_epoll_add(nx, in->timerfd) < 0 ||
	    (in->mnt_wake >= 0 && epoll_ctl(nx->epfd, EPOLL_CTL_ADD, in->mnt_wake, &ev) < 0)) {
		int err = errno;
		if (in->fd >= 0)
			close(in->fd);
		if (in->timerfd >= 0)
			close(in->timerfd);
		if (in->mnt_wake >= 0)
			close(in->mnt_wake);
		if (in->mnt_check >= 0)
			close(in->mnt_check);
		free(in);
		errno = err;
		return -1;
	}
	nx->bdata = in;
	return 0;
}

static void ino_close(struct notifyx *nx)
{
	struct ino *in = ino_of(nx);
	struct nx_watch *w;
	struct kwatch *kw;
	size_t pos = 0;

	/* Closing the inotify descriptor drops every kernel watch at once (in a
	 * forked child it only drops the child's reference). */
	close(in->fd);
	close(in->timerfd);
	nx_ino_sync_done(in);
	if (in->mnt_wake >= 0)
		close(in->mnt_wake);
	if (in->mnt_check >= 0)
		close(in->mnt_check);
	while (nx_map_next(&nx->watches, &pos, NULL, (void **)&w)) {
		struct iwatch *iw = iw_of(w);
		if (iw && iw->rootfd >= 0)
			close(iw->rootfd);
		if (iw)
			free(iw->rootname);
		free(iw);
		w->bdata = NULL;
	}
	pos = 0;
	while (nx_index_next(&in->kwatches, &pos, (void **)&kw)) {
		struct nx_node *n;

		for (size_t si = 0; (n = nx_subs_get(kw->subs, si)); si++)
			n->kref = NULL;
		nx_subs_free(&kw->subs);
	}
	nx_index_free(&in->kwatches);
	nx_ino_kwatch_free_all(in);
	nx_map_free(&in->guards);
	nx_map_free(&in->kept);
	nx_map_free(&in->mounts);
	for (int i = 0; i < 2; i++) {
		nx_map_free(&in->suppress[i]);
		nx_kt_free_grave(nx, &in->graveyard[i]);
	}
	free(in->deferred);
	free(in->vec[0]);
	free(in->vec[1]);
	free(in->blocked);
	free(in);
}

static void free_iwatch(struct ino *in, struct nx_watch *w)
{
	struct iwatch *iw = iw_of(w);

	if (!iw)
		return;
	nx_ino_unguard(in, w);
	if (iw->rootfd >= 0)
		close(iw->rootfd);
	free(iw->rootname);
	free(iw);
	w->bdata = NULL;
}

/* Watches (and, with LIST, lists) the tree of w from its root, held in its
 * iwatch, into w->root, a bare root node; a recursive watch also guards its
 * root.  -1 with errno when the watch cannot be set up (see walk()). */
static int watch_tree(struct notifyx *nx, struct nx_watch *w)
{
	struct ino *in = ino_of(nx);

	in->path[2][0] = '\0';
	if (nx_ino_walk(nx, w->root, -1, "", in->path[2], 0, w->flags & NOTIFYX_WATCH_LIST, true) < 0 ||
	    w->ended)
		return -1;
	return (w->flags & NOTIFYX_WATCH_RECURSIVE) ? nx_ino_guard(nx, w, true) : 0;
}

static int ino_add_watch(struct notifyx *nx, struct nx_watch *w)
{
	struct ino *in = ino_of(nx);
	struct iwatch *iw = calloc(1, sizeof(*iw));
	struct stat st;
	int err;

	if (!iw)
		return -1;
	w->bdata = iw;
	/* The root is reached through this descriptor from now on (held by
	 * recursive watches; the others need it only to be set up). */
	iw->rootfd = open(w->abspath, O_PATH | O_CLOEXEC |
			  (w->flags & NOTIFYX_WATCH_NOFOLLOW ? O_NOFOLLOW : 0));
	if (iw->rootfd < 0 || fstat(iw->rootfd, &st) < 0)
		goto fail;
	iw->isdir = S_ISDIR(st.st_mode);
	iw->dev = st.st_dev;
	iw->ino = st.st_ino;
	iw->mnt_id = nx_mount_id(iw->rootfd);
	if ((w->flags & NOTIFYX_WATCH_RECURSIVE) && iw->isdir && iw->mnt_id)
		nx_ino_hold_mount_parent(in, iw);
	if (w->flags & (NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_LIST)) {
		if (!iw->isdir) { /* the core checked, but it may have changed since */
			errno = ENOTDIR;
			goto fail;
		}
		if (watch_tree(nx, w) < 0)
			goto fail;
	} else {
		uint32_t extra = (w->flags & NOTIFYX_WATCH_NOFOLLOW ? IN_DONT_FOLLOW : 0) |
				 (w->flags & NOTIFYX_WATCH_ONLYDIR ? IN_ONLYDIR : 0);
		if (nx_ino_attach(in, w->root, w->abspath, extra) < 0)
			goto fail;
	}
	if (!(w->flags & NOTIFYX_WATCH_RECURSIVE)) {
		close(iw->rootfd);
		iw->rootfd = -1;
	}
	return 0;
fail:
	/* Nothing of a failed watch stays behind. */
	err = errno;
	nx_ino_bury(nx, w->root);
	w->root = NULL;
	free_iwatch(in, w);
	errno = err;
	return -1;
}

static void ino_rm_watch(struct notifyx *nx, struct nx_watch *w)
{
	nx_ino_bury(nx, w->root);
	w->root = NULL;
	free_iwatch(ino_of(nx), w);
}

/* The kernel watches a repair may use again. */
struct kept {
	struct kwatch **v;
	size_t n, cap;
};

static void keep(struct ino *in, struct kept *k, struct kwatch *kw)
{
	if (!kw || nx_map_get(&in->kept, (uint64_t)kw->kwd))
		return;
	if (k->n == k->cap) {
		size_t cap = k->cap ? k->cap * 2 : 64;
		struct kwatch **v = realloc(k->v, cap * sizeof(*v));
		if (!v)
			return; /* released and added again: a new wd, no harm */
		k->v = v;
		k->cap = cap;
	}
	if (nx_map_put(&in->kept, (uint64_t)kw->kwd, (void *)1) == 0)
		k->v[k->n++] = kw;
}

struct keeping {
	struct ino *in;
	struct kept *k;
};

static void keep_node(void *ctx, struct nx_node *n)
{
	struct keeping *kp = ctx;

	keep(kp->in, kp->k, n->kref);
}

/*
 * After a loss of w's events (NOTIFYX_WATCH_RESCAN), the table of w no
 * longer matches the disk: it is built again from the held root, as
 * ino_add_watch builds it, and the old one is buried.  The old table's kernel
 * watches are kept meanwhile, so that a directory still there keeps its wd
 * (inotify_add_watch on a watched inode returns it): dropping them all would
 * queue one IN_IGNORED per directory, enough to overflow the kernel queue
 * again with a large tree.  The records queued before the new table are not
 * w's any more (stale()): the tree is read after them.
 */

static int ino_repair(struct notifyx *nx, struct nx_watch *w)
{
	struct ino *in = ino_of(nx);
	struct iwatch *iw = iw_of(w);
	struct kept k = { 0 };
	struct nx_node *root;
	int queued = 0, ret, err;

	/* Otherwise one kernel watch on the root: it loses nothing. */
	if (!(w->flags & NOTIFYX_WATCH_RECURSIVE) || !iw || iw->rootfd < 0 || !w->root)
		return 0;
	if (!(root = nx_node_new_root(w)))
		return -1;
	/* An entry whose inode has not changed since before the records that
	 * stale() drops (read on the clock first) was neither made nor linked
	 * after them: no IN_CREATE of it can follow the listing, which needs
	 * not count it (nx_kt_repair_from). */
	in->repair_from = nx_kt_repair_from();
	ioctl(in->fd, FIONREAD, &queued);
	iw->since = in->stream + (uint64_t)queued;
	nx_node_foreach(w->root, keep_node, &(struct keeping){ in, &k });
	keep(in, &k, iw->guard);
	nx_ino_bury(nx, w->root);
	w->root = root;
	/* Directories of the old table waiting to be watched go with it (the
	 * graveyard frees them after two dry points, the list might outlive
	 * that). */
	size_t j = 0;
	for (size_t i = 0; i < in->ndeferred; i++)
		if (!in->deferred[i].node->dead)
			in->deferred[j++] = in->deferred[i];
	in->ndeferred = j;
	in->repairing = true;
	ret = watch_tree(nx, w);
	err = errno;
	in->repairing = false;
	for (size_t i = 0; i < k.n; i++) {
		nx_map_del(&in->kept, (uint64_t)k.v[i]->kwd);
		nx_ino_kwatch_release(in, k.v[i]);
	}
	free(k.v);
	errno = err;
	return ret < 0 ? -1 : 1; /* listed: w->flags has NOTIFYX_WATCH_LIST */
}

const struct nx_backend nx_backend_inotify = {
	.name = "inotify",
	.id = NOTIFYX_BACKEND_INOTIFY,
	.supported = ino_supported,
	.open = ino_open,
	.close = ino_close,
	.add_watch = ino_add_watch,
	.rm_watch = ino_rm_watch,
	.process = nx_ino_process,
	.repair = ino_repair,
};

