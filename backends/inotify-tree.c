/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The inotify backend: its kernel watches, held roots, the suppression of
 * its own events, and the walk of new directories (see inotify.c). */
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

/* ---- kernel watches ----
 *
 * They come from blocks: a kwatch is 24 bytes where a malloc chunk of its
 * own is 32, and a recursive watch has one per directory (memory of large
 * trees, issue "No stalls at scale").  A released one goes to a free list
 * (linked through its subs) for the next; the blocks go at close. */

#define KW_BLOCK 170 /* 8 + 170 * 24 bytes: a 4 KiB malloc chunk */

struct kwblock {
	struct kwblock *next;
	struct kwatch kw[KW_BLOCK];
};

static struct kwatch *kwatch_alloc(struct ino *in)
{
	struct kwatch *kw;

	if (!in->kwfree) {
		struct kwblock *b = malloc(sizeof(*b));

		if (!b)
			return NULL;
		b->next = in->kwblocks;
		in->kwblocks = b;
		for (size_t i = 0; i < KW_BLOCK; i++) {
			b->kw[i].subs = (nx_subs)in->kwfree;
			in->kwfree = &b->kw[i];
		}
	}
	kw = in->kwfree;
	in->kwfree = (struct kwatch *)kw->subs;
	memset(kw, 0, sizeof(*kw));
	return kw;
}

static void kwatch_free(struct ino *in, struct kwatch *kw)
{
	if (in->last_kw == kw)
		in->last_kw = NULL;
	kw->subs = (nx_subs)in->kwfree;
	in->kwfree = kw;
}

void nx_ino_kwatch_free_all(struct ino *in)
{
	while (in->kwblocks) {
		struct kwblock *b = in->kwblocks;

		in->kwblocks = b->next;
		free(b);
	}
	in->kwfree = NULL;
	in->last_kw = NULL;
}

/* Adds mask to the kernel watch of kpath; NULL with errno on failure. */
static struct kwatch *kwatch_add(struct ino *in, const char *kpath, uint32_t mask)
{
	struct kwatch *kw;
	int kwd, queued;

	kwd = inotify_add_watch(in->fd, kpath, mask | IN_MASK_ADD);
	if (kwd < 0)
		return NULL;
	kw = nx_ino_kwatch(in, kwd);
	if (!kw) {
		if (!(kw = kwatch_alloc(in)) ||
		    (kw->kwd = kwd, nx_index_add(&in->kwatches, kw)) < 0) {
			if (kw)
				kwatch_free(in, kw);
			inotify_rm_watch(in->fd, kwd);
			errno = ENOMEM;
			return NULL;
		}
		if (ioctl(in->fd, FIONREAD, &queued) == 0)
			kw->born = in->stream + (uint64_t)queued;
	}
	kw->kmask |= mask & ~(IN_ONLYDIR | IN_DONT_FOLLOW);
	return kw;
}

/* The kernel watch goes when nothing uses it any more. */
void nx_ino_kwatch_release(struct ino *in, struct kwatch *kw)
{
	if (kw->subs || nx_map_get(&in->guards, (uint64_t)kw->kwd) ||
	    nx_map_get(&in->kept, (uint64_t)kw->kwd))
		return;
	inotify_rm_watch(in->fd, kw->kwd); /* EINVAL if the kernel dropped it already */
	nx_index_del(&in->kwatches, kw->kwd);
	kwatch_free(in, kw);
}

int nx_ino_attach(struct ino *in, struct nx_node *n, const char *kpath, uint32_t extra)
{
	struct kwatch *kw = kwatch_add(in, kpath, nx_ino_node_mask(n) | extra);

	if (!kw)
		return -1;
	/* A directory the watch knows already under another name: the name
	 * was reached through moves not read yet (see walk()).  (A directory
	 * seen twice through a bind mount inside the tree is watched at one
	 * place only.) */
	struct nx_node *s;

	for (size_t si = 0; (s = nx_subs_get(kw->subs, si)); si++) {
		if (nx_node_watch(s) == nx_node_watch(n) && !nx_within(n, s)) {
			in->conflict = s;
			errno = EEXIST;
			return -1;
		}
	}
	if (nx_subs_add(&kw->subs, n) < 0) {
		nx_ino_kwatch_release(in, kw);
		errno = ENOMEM;
		return -1;
	}
	n->kref = kw;
	return 0;
}

void nx_ino_detach(struct ino *in, struct nx_node *n)
{
	struct kwatch *kw = n->kref;

	if (!kw)
		return;
	nx_subs_del(&kw->subs, n);
	n->kref = NULL;
	nx_ino_kwatch_release(in, kw);
}

static void bury_one(void *ctx, struct nx_node *n)
{
	struct ino *in = ctx;

	nx_ino_detach(in, n);
	if (in->mounts.len)
		nx_map_del(&in->mounts, (uint64_t)(uintptr_t)n);
}

/* Takes n and its subtree out of the tree; freed with the generation after
 * this one (see nx_ino_dry_point), so that lists of subscribers being walked,
 * suppression entries and deferred directories naming them stay valid. */
void nx_ino_bury(struct notifyx *nx, struct nx_node *n)
{
	struct ino *in = ino_of(nx);

	nx_kt_bury(nx, n, bury_one, in, &in->graveyard[0]);
}

/* ---- held roots ----
 *
 * A recursive watch holds its root open (O_PATH) and reaches every directory
 * of its tree from there, so that a root that was moved, or a directory
 * above it that was renamed, changes nothing, and paths longer than PATH_MAX
 * from "/" work.  An open descriptor on a directory holds back its
 * IN_DELETE_SELF until it is closed (measured on ext4 and tmpfs, kernel
 * 6.18: rmdir of a directory held open raises no event on it at all), so the
 * root's parent is watched for IN_DELETE (its "guard"), and each deletion
 * there looks whether the root has any link left.  A move of the root (its
 * IN_MOVE_SELF) moves the guard to its new parent. */

void nx_ino_unguard(struct ino *in, struct nx_watch *w)
{
	struct iwatch *iw = iw_of(w);
	struct kwatch *kw = iw ? iw->guard : NULL;

	if (!kw)
		return;
	struct nx_watch *head = nx_map_get(&in->guards, (uint64_t)kw->kwd);
	if (head == w) {
		if (iw->gnext)
			nx_map_put(&in->guards, (uint64_t)kw->kwd, iw->gnext); /* replaces: no allocation */
		else
			nx_map_del(&in->guards, (uint64_t)kw->kwd);
	} else {
		for (struct nx_watch *p = head; p; p = iw_of(p)->gnext) {
			if (iw_of(p)->gnext == w) {
				iw_of(p)->gnext = iw->gnext;
				break;
			}
		}
	}
	iw->guard = NULL;
	iw->gnext = NULL;
	nx_ino_kwatch_release(in, kw);
}

/* The held root of w has no link left. */
static bool root_gone(const struct nx_watch *w)
{
	const struct iwatch *iw = iw_of(w);
	struct stat st;

	return !w->ended && iw && iw->rootfd >= 0 && !iw->rootname && fstat(iw->rootfd, &st) == 0 &&
	       !st.st_nlink;
}

/* The root of w is gone when it has no link left: DELETE_SELF ends w
 * (true). */
bool nx_ino_check_root(struct notifyx *nx, struct nx_watch *w)
{
	struct ino *in = ino_of(nx);

	if (!root_gone(w))
		return false;
	if (in->repairing) {
		/* The core goes on with w after its repair (it reads the tree
		 * next, and reports what went): w ends at the next dry point of
		 * process(), which the repair's SYNC makes the application
		 * reach. */
		in->recheck = true;
		return false;
	}
	nx_emit(nx, w, NOTIFYX_DELETE_SELF, NOTIFYX_EVENT_ISDIR, 0, 0, "", 0, NULL, 0);
	nx_end_watch(nx, w);
	return true;
}

/* Watches the parent of w's held root for the root's deletion.  When it
 * cannot, an ERROR says so; at_add, running out of kernel watches or memory
 * fails instead (-1 with errno), as for any other directory of the tree. */
int nx_ino_guard(struct notifyx *nx, struct nx_watch *w, bool at_add)
{
	struct ino *in = ino_of(nx);
	struct iwatch *iw = iw_of(w);
	struct stat pst, rst;
	struct kwatch *kw;
	char kpath[32];
	int pfd, err = 0;

	nx_ino_unguard(in, w);
	if (iw->rootname) /* a mount root cannot be removed or moved: no guard */
		return 0;
	pfd = openat(iw->rootfd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (pfd < 0 || fstat(pfd, &pst) < 0 || fstat(iw->rootfd, &rst) < 0) {
		err = errno;
	} else if (pst.st_dev != rst.st_dev || pst.st_ino != rst.st_ino) { /* "/" has no parent */
		snprintf(kpath, sizeof(kpath), "/proc/self/fd/%d", pfd);
		if ((kw = kwatch_add(in, kpath, IN_DELETE | IN_ONLYDIR))) {
			iw->gnext = nx_map_get(&in->guards, (uint64_t)kw->kwd);
			if (nx_map_put(&in->guards, (uint64_t)kw->kwd, w) == 0) {
				iw->guard = kw;
			} else {
				err = ENOMEM;
				iw->gnext = NULL;
				nx_ino_kwatch_release(in, kw);
			}
		} else {
			err = errno;
		}
	}
	if (pfd >= 0)
		close(pfd);
	if (at_add && (err == ENOSPC || err == ENOMEM)) {
		errno = err;
		return -1;
	}
	nx_ino_check_root(nx, w); /* removed before the guard was set */
	/* Without a guard nothing would tell the root's deletion (a root
	 * that is gone, or going, needs none). */
	if (err && !w->ended && !root_gone(w))
		nx_kt_error(nx, w, "", err);
	return 0;
}

/* Opens rel below the root of w (see struct iwatch). */
static int open_below_root(const struct iwatch *iw, const char *rel, int flags)
{
	struct stat st;
	int rfd, fd, err;

	if (!iw->rootname)
		return nx_open_below(iw->rootfd, rel, flags);
	rfd = openat(iw->rootfd, iw->rootname, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (rfd < 0)
		return -1;
	if (fstat(rfd, &st) < 0 || st.st_dev != iw->dev || st.st_ino != iw->ino) {
		close(rfd);
		errno = ESTALE; /* unmounted, or covered by another mount */
		return -1;
	}
	fd = nx_open_below(rfd, rel, flags);
	err = errno;
	close(rfd);
	errno = err;
	return fd;
}

/* When w's root is the root of a mount, holds its parent instead of it. */
void nx_ino_hold_mount_parent(struct ino *in, struct iwatch *iw)
{
	char kpath[32], *base;
	ssize_t len;
	int pfd, fd;

	pfd = openat(iw->rootfd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (pfd < 0)
		return;
	snprintf(kpath, sizeof(kpath), "/proc/self/fd/%d", iw->rootfd);
	len = readlink(kpath, in->path[3], PATH_MAX - 1);
	if (nx_mount_id(pfd) == iw->mnt_id || len <= 1 || in->path[3][0] != '/') {
		close(pfd);
		return;
	}
	in->path[3][len] = '\0';
	base = strrchr(in->path[3], '/') + 1;
	if (!(iw->rootname = strdup(base))) {
		close(pfd);
		return;
	}
	fd = iw->rootfd;
	iw->rootfd = pfd;
	if ((pfd = open_below_root(iw, "", O_PATH | O_DIRECTORY)) < 0) {
		/* Not reachable by its name: keep holding the root itself. */
		close(iw->rootfd);
		iw->rootfd = fd;
		free(iw->rootname);
		iw->rootname = NULL;
		return;
	}
	close(pfd);
	close(fd);
}

/* ---- suppression of events already reported or caused by the library ---- */


/*
 * How long a suppression entry lives at least.  A listing can see an entry
 * before the kernel has queued its IN_CREATE (the creating process may be
 * preempted between making the entry visible and queueing the event), so a
 * kernel queue read dry does not mean that no duplicate can come: under a
 * churn that runs flat out, emptying the table there reported some listed
 * entries twice.  Entries live two generations, each of at least this.
 */
#define SUP_KEEP_NS (50 * 1000 * 1000)

static void sup_add(struct ino *in, const void *obj, const char *name, size_t len, int kind,
		    unsigned count)
{
	nx_kt_count(&in->suppress[0], nx_kt_key(obj, name, len, kind), count);
}

bool nx_ino_sup_take(struct ino *in, const void *obj, const char *name, size_t len, int kind)
{
	uint64_t key;

	if (!in->suppress[0].len && !in->suppress[1].len)
		return false; /* no listing since two dry points: no hash of the name */
	key = nx_kt_key(obj, name, len, kind);
	return nx_kt_take(&in->suppress[0], key) || nx_kt_take(&in->suppress[1], key);
}

/* The events a listing of directory name caused in kernel watch kw (with
 * IN_OPEN when kw is its parent's): those kw asks for are to be dropped. */
static void sup_listing(struct ino *in, struct kwatch *kw, const char *name, size_t len,
			uint32_t open, unsigned calls)
{
	if (kw->kmask & open)
		sup_add(in, kw, name, len, SUP_OPEN, 1);
	if (kw->kmask & IN_ACCESS)
		sup_add(in, kw, name, len, SUP_ACCESS, calls);
	if (kw->kmask & IN_CLOSE_NOWRITE)
		sup_add(in, kw, name, len, SUP_CLOSE, 1);
}

void nx_ino_too_long(struct notifyx *nx, struct nx_node *n)
{
	nx_kt_too_long(nx, n, ino_of(nx)->path[0]);
}

/* The path of n's entry name, relative to the watch root, in in->path[i]. */
size_t nx_ino_entry_path(struct ino *in, const struct nx_node *n, const char *name, size_t nlen,
			 int i)
{
	return nx_kt_entry_path(in->path[i], n, name, nlen);
}

/* ---- walking new directories ----
 *
 * A directory is opened relative to its parent's descriptor, never by a path
 * built from the path table: the table lags behind the filesystem by the
 * events not read yet, and a stale path could lead to another directory. */

/* Builds the absolute path of node n's entry name into in->path[0];
 * returns its length, or SIZE_MAX when it does not fit. */
static size_t abs_path(struct ino *in, const struct nx_node *n, const char *name, size_t nlen)
{
	const struct nx_watch *w = nx_node_watch(n);
	char *p = in->path[0];
	size_t rel = w->abspath_len + 1, dlen, len;

	if (rel >= PATH_MAX)
		return SIZE_MAX;
	memcpy(p, w->abspath, w->abspath_len);
	p[w->abspath_len] = '/';
	dlen = nx_node_path(n, p + rel, PATH_MAX - rel);
	if (dlen == SIZE_MAX)
		return SIZE_MAX;
	len = nx_join(p + rel, PATH_MAX - rel, p + rel, dlen, name, nlen);
	return len == SIZE_MAX ? SIZE_MAX : rel + len;
}

/* Opens the directory of node n (O_PATH) from the held root of its watch,
 * making sure through its kernel watch that the path still leads to it.
 * ESTALE when it leads elsewhere; the errno of inotify_add_watch when that
 * check fails. */
int nx_ino_open_node(struct notifyx *nx, struct nx_node *n)
{
	struct ino *in = ino_of(nx);
	struct kwatch *kw = n->kref;
	const struct iwatch *iw = iw_of(nx_node_watch(n));
	char kpath[32];
	int fd, kwd;

	if (!kw || !iw || (iw->rootfd < 0 && n->parent)) {
		errno = ESTALE;
		return -1;
	}
	if (iw->rootfd < 0) /* a watch that holds nothing: its root by path */
		fd = open(nx_node_watch(n)->abspath, O_PATH | O_DIRECTORY | O_CLOEXEC);
	else if (nx_node_path(n, in->path[3], PATH_MAX) == SIZE_MAX)
		return errno = ENAMETOOLONG, -1;
	else
		fd = open_below_root(iw, in->path[3], O_PATH | O_DIRECTORY);
	if (fd < 0 || !in->proc_fd)
		return fd;
	snprintf(kpath, sizeof(kpath), "/proc/self/fd/%d", fd);
	kwd = inotify_add_watch(in->fd, kpath, kw->kmask | IN_MASK_ADD);
	if (kwd == kw->kwd)
		return fd;
	int err = kwd < 0 ? errno : ESTALE; /* ENOSPC, ENOMEM: cannot tell */
	if (kwd >= 0 && !nx_ino_kwatch(in, kwd))
		inotify_rm_watch(in->fd, kwd); /* a directory we do not watch */
	close(fd);
	errno = err;
	return -1;
}

/* Opens directory name of node n for listing: relative to pfd, or, when
 * pfd is -1, by its path rel from the watch's root. */
static int open_dir(const struct iwatch *iw, int pfd, const char *name, const char *rel)
{
	int flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK;

	if (pfd >= 0)
		return openat(pfd, name, flags | O_NOFOLLOW);
	return open_below_root(iw, rel, flags);
}

/* Watches the directory open at fd, node n. */
static int attach_fd(struct notifyx *nx, struct nx_node *n, int fd)
{
	struct ino *in = ino_of(nx);
	char kpath[32];

	snprintf(kpath, sizeof(kpath), "/proc/self/fd/%d", fd);
	if (in->proc_fd) {
		if (nx_ino_attach(in, n, kpath, IN_ONLYDIR) == 0 || errno != ENOENT)
			return n->kref ? 0 : -1;
		in->proc_fd = false; /* no /proc here: watch by path */
	}
	if (!n->parent)
		return nx_ino_attach(in, n, nx_node_watch(n)->abspath, IN_ONLYDIR);
	if (abs_path(in, n->parent, nx_node_name(n), nx_node_name_len(n)) == SIZE_MAX)
		return errno = ENAMETOOLONG, -1;
	return nx_ino_attach(in, n, in->path[0], IN_ONLYDIR | IN_DONT_FOLLOW);
}

/* Is an arrival of name in node dir's directory among the records not
 * handled yet? */
static bool pending_arrival(const struct ino *in, const struct nx_node *dir, const char *name,
			    size_t len)
{
	const struct kwatch *kw = dir->kref;
	struct inrec r;

	for (size_t pos = in->next; kw && nx_inotify_decode(in->buf, in->len, pos, &r); pos += r.size)
		if ((r.mask & IN_MOVED_TO) && r.wd == kw->kwd && r.name_len == len &&
		    !memcmp(r.name, name, len))
			return true;
	return false;
}

/*
 * The directory just opened as node n is known to the watch as another node
 * (in->conflict): the filesystem has moved on from what the events read so
 * far describe.  If a move not handled yet brings the known directory to n's
 * place, n goes (false) and that move will rename the known node.  Otherwise
 * the known node is what is out of date (its departure was reported, or will
 * be, from a place the kernel watched): it goes, and n is watched and listed.
 */
static bool settle_conflict(struct notifyx *nx, struct nx_node *n)
{
	struct ino *in = ino_of(nx);

	if (pending_arrival(in, n->parent, nx_node_name(n), nx_node_name_len(n))) {
		errno = EEXIST;
		return false;
	}
	nx_ino_bury(nx, in->conflict);
	return true;
}

/* The mount directory node n was reached through. */
static uint64_t node_mount(const struct ino *in, const struct nx_node *n)
{
	void *id;

	for (; n->parent; n = n->parent)
		if ((id = nx_map_get(&in->mounts, (uint64_t)(uintptr_t)n)))
			return (uint64_t)(uintptr_t)id;
	return iw_of(nx_node_watch(n))->mnt_id;
}

/* Remembers where a mount begins inside a tree (n, open at fd), for
 * nx_ino_check_mounts(). */
static void note_mount(struct ino *in, struct nx_node *n, int fd)
{
	uint64_t id = nx_mount_id(fd);

	if (id && id != node_mount(in, n->parent))
		nx_map_put(&in->mounts, (uint64_t)(uintptr_t)n, (void *)(uintptr_t)id);
	else if (in->mounts.len)
		nx_map_del(&in->mounts, (uint64_t)(uintptr_t)n);
}

/* Directory node n, in the table, is to be watched and listed once the
 * kernel queue has been read dry (see nx_ino_add_subdir).  When that cannot be
 * remembered, n leaves the table and the watch has lost events. */
static void defer(struct notifyx *nx, struct nx_node *n, bool report, int tries)
{
	struct ino *in = ino_of(nx);

	if (in->ndeferred == in->deferred_cap) {
		size_t cap = in->deferred_cap ? in->deferred_cap * 2 : 8;
		struct deferred *v = realloc(in->deferred, cap * sizeof(*v));
		if (!v) {
			nx_lost(nx, nx_node_watch(n));
			nx_ino_bury(nx, n);
			return;
		}
		in->deferred = v;
		in->deferred_cap = cap;
	}
	in->deferred[in->ndeferred++] = (struct deferred){ .node = n, .report = report, .tries = tries };
}

/*
 * Appends to buf what the kernel has queued now, so that the records not
 * handled yet include every change made before this call (some made later
 * may come along).  False when that does not fit in buf.  Records fed by a
 * test have no kernel queue behind them.
 */
bool nx_ino_read_more(struct ino *in)
{
	int queued;
	ssize_t n;

	if (in->fed)
		return true;
	if (ioctl(in->fd, FIONREAD, &queued) < 0)
		return false;
	while (queued > 0) {
		if ((size_t)queued > sizeof(in->buf) - in->len)
			return false;
		n = read(in->fd, in->buf + in->len, sizeof(in->buf) - in->len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		in->len += (size_t)n;
		in->stream += (uint64_t)n;
		nx_ino_note_read(in);
		queued -= (int)n;
	}
	return true;
}

/*
 * Do records read but not handled yet change entry n->name of n's parent
 * (create, delete, move it away or onto it, exchange it)?  Then what that
 * name leads to now is not what the table calls n: the table follows those
 * records first.  Records older than a repair of n's watch are not its own
 * (stale()): they change nothing of its table.
 */
static bool name_touched(const struct ino *in, const struct nx_node *n)
{
	const struct kwatch *kw = n->parent ? n->parent->kref : NULL;
	uint64_t at = in->stream - in->len; /* the stream offset of buf[0] */
	const struct iwatch *iw = iw_of(nx_node_watch(n));
	uint64_t since = iw ? iw->since : 0;
	struct inrec r;

	/* No record queued since kw was added has been read: none can be kw's. */
	if (!kw || kw->born >= in->stream)
		return false;
	for (size_t pos = in->next; nx_inotify_decode(in->buf, in->len, pos, &r); pos += r.size)
		if (r.wd == kw->kwd && (r.mask & DIR_CHANGES) && at + pos >= since &&
		    r.name_len == nx_node_name_len(n) && !memcmp(r.name, nx_node_name(n), r.name_len))
			return true;
	return false;
}

/* nx_kt_walk's enter(): watches directory node n, or defers it. */
static int enter(struct nx_kt_walk *wk, struct nx_node *n, int pfd, const char *name,
		 const char *rel)
{
	struct notifyx *nx = wk->nx;
	struct ino *in = ino_of(nx);
	int fd, err;
	bool attached;

	if (name_touched(in, n)) {
		defer(nx, n, wk->report, 0);
		return NX_KT_SKIP;
	}
	if ((fd = open_dir(iw_of(nx_node_watch(n)), pfd, name, rel)) < 0)
		return -1;
	if (nx_kt_other_dev(n, fd)) {
		close(fd);
		nx_ino_bury(nx, n);
		return NX_KT_SKIP;
	}
	attached = attach_fd(nx, n, fd) == 0;
	err = errno;
	/* Records of changes made before the directory was opened may have
	 * come only now: the table follows them first.  So in the walk of a
	 * new watch or a repair too: its parent was listed first, and an
	 * exchange of two of its subdirectories between that listing and
	 * their opening would otherwise swap back, by its records, what each
	 * name leads to now.  Where the kernel queue holds more than buf
	 * takes (a repair after it overflowed), such a walk goes by the
	 * records read: deferring all it enters would list nothing. */
	if (n->parent && ((!nx_ino_read_more(in) && !wk->fatal) || name_touched(in, n))) {
		nx_ino_detach(in, n);
		close(fd);
		defer(nx, n, wk->report, 0);
		return NX_KT_SKIP;
	}
	if (!attached && err == EEXIST && n->parent && !in->retrying) {
		/* Known under another name: the events that moved it here are
		 * not read yet (a listing here now would show the future of
		 * what they do).  Once they are, the table has it here, or
		 * the conflict is settled. */
		close(fd);
		defer(nx, n, wk->report, 0);
		return NX_KT_SKIP;
	}
	errno = err;
	if (!n->kref && (errno != EEXIST || !n->parent || !settle_conflict(nx, n) ||
			 attach_fd(nx, n, fd) < 0)) {
		err = errno;
		close(fd);
		if (err == EEXIST && n->parent) {
			nx_ino_bury(nx, n);
			return NX_KT_SKIP;
		}
		errno = err;
		return -1;
	}
	if (n->parent)
		note_mount(in, n, fd);
	return fd;
}

/* The listing read the directory: its ACCESS and CLOSE_NOWRITE (and the
 * OPEN its parent saw) are the library's own, not the application's.  Only
 * what a kernel watch asks for is queued and so remembered: else a large
 * tree would hold five entries per directory until the next read. */
static void listed(struct nx_kt_walk *wk, struct nx_node *n, unsigned calls)
{
	struct ino *in = ino_of(wk->nx);

	sup_listing(in, n->kref, "", 0, 0, calls);
	if (n->parent && n->parent->kref)
		sup_listing(in, n->parent->kref, nx_node_name(n), nx_node_name_len(n), IN_OPEN, calls);
}

/*
 * Watches directory name (relative to pfd, the directory of n's parent, or
 * found by path when pfd is -1), which is node n, then lists it and does the
 * same for its subdirectories (see nx_kt_walk).  Outside fatal, a directory
 * whose name records not handled yet change is deferred (see nx_ino_add_subdir).
 */
int nx_ino_walk(struct notifyx *nx, struct nx_node *n, int pfd, const char *name, char *rel,
		size_t rel_len, bool report, bool fatal)
{
	struct ino *in = ino_of(nx);
	struct nx_kt_walk wk = { .nx = nx, .report = report, .fatal = fatal,
				 .reported = &in->suppress[0], .reported_kind = SUP_CREATE,
				 .made_from = in->repairing ? in->repair_from : 0,
				 .scratch = in->path[1], .enter = enter, .listed = listed,
				 .bury = nx_ino_bury };

	return nx_kt_walk(&wk, n, pfd, name, rel, rel_len, 0);
}

/* Watches and lists c, a directory node that is in the table but not
 * watched yet, or defers it (see nx_ino_add_subdir).  tries: the retries that
 * found its parent unreachable. */
static void watch_new(struct notifyx *nx, struct nx_node *c, bool report, int tries)
{
	struct ino *in = ino_of(nx);
	char *rel = in->path[2];
	size_t len = nx_ino_entry_path(in, c->parent, nx_node_name(c), nx_node_name_len(c), 2);
	int pfd;

	if (len == SIZE_MAX) { /* its parent was renamed meanwhile */
		nx_ino_too_long(nx, c->parent);
		nx_ino_bury(nx, c);
		return;
	}
	if (name_touched(in, c)) {
		defer(nx, c, report, tries);
		return;
	}
	if ((pfd = nx_ino_open_node(nx, c->parent)) < 0) {
		if (errno == ENOSPC || errno == ENOMEM || errno == EMFILE || errno == ENFILE ||
		    errno == EACCES || errno == EPERM || errno == EIO) {
			/* Not a move of events not read yet (ESTALE, ENOENT, or
			 * openat2's EAGAIN and EXDEV under a rename): the parent
			 * cannot be checked, nor the watch be sure. */
			nx_lost(nx, nx_node_watch(c));
			nx_ino_bury(nx, c);
		} else if (in->retrying && ++tries >= 3) {
			/* Still unreachable with nothing left to read. */
			nx_kt_error(nx, nx_node_watch(c), rel, ENOENT);
			nx_ino_bury(nx, c);
		} else {
			defer(nx, c, report, tries);
		}
		return;
	}
	if (nx_ino_walk(nx, c, pfd, nx_node_name(c), rel, len, report, false) < 0)
		nx_lost(nx, nx_node_watch(c));
	close(pfd);
}

/*
 * A directory arrived at n/name: it enters the table, and is watched and
 * listed.  Not at once in two cases, where it stays in the table unwatched
 * until the kernel queue has been read dry:
 * - Records read but not handled yet change that name (a burst made before
 *   the library read its first record): what the name leads to now is what
 *   those records leave there, not the directory that arrived.  The node
 *   follows those records (renamed, exchanged, buried) and is opened by the
 *   name they leave it; opened now, the name-to-directory table would be
 *   swapped by them, and a listing would show their future under a past
 *   name.
 * - n cannot be reached now (records not read yet moved it).
 */
void nx_ino_add_subdir(struct notifyx *nx, struct nx_node *n, const char *name, size_t nlen,
		       bool report)
{
	struct nx_watch *w = nx_node_watch(n);
	struct nx_node *c;

	if (!(w->flags & NOTIFYX_WATCH_RECURSIVE) || w->ended || n->dead ||
	    nx_node_find(&nx->paths, n, name, nlen))
		return;
	if (nx_ino_entry_path(ino_of(nx), n, name, nlen, 2) == SIZE_MAX)
		nx_ino_too_long(nx, n);
	else if (!(c = nx_node_add(&nx->paths, n, name, nlen)))
		nx_lost(nx, w);
	else
		watch_new(nx, c, report, 0);
}

/* Directories that were not watched when they appeared. */
void nx_ino_retry_deferred(struct notifyx *nx, bool final)
{
	struct ino *in = ino_of(nx);
	struct deferred *v = in->deferred;
	size_t n = in->ndeferred;

	in->deferred = NULL; /* watch_new defers again into a fresh list */
	in->ndeferred = in->deferred_cap = 0;
	in->retrying = final;
	for (size_t i = 0; i < n; i++) {
		struct nx_node *c = v[i].node;
		if (!c->dead && !nx_node_watch(c)->ended && !c->kref)
			watch_new(nx, c, v[i].report, v[i].tries);
	}
	in->retrying = false;
	free(v);
}

/* The kernel queue was read dry, and the directories deferred were tried
 * again: a generation of suppression entries ends if it is old enough (see
 * SUP_KEEP_NS).  Nodes buried in a generation are freed with the next one,
 * when no suppression entry (and no deferred directory) can name them any
 * more. */
void nx_ino_dry_point(struct notifyx *nx)
{
	struct ino *in = ino_of(nx);
	uint64_t now;

	if ((now = nx_now_ns()) - in->generation_start < SUP_KEEP_NS)
		return;
	in->generation_start = now;
	nx_map_free(&in->suppress[1]);
	in->suppress[1] = in->suppress[0];
	memset(&in->suppress[0], 0, sizeof(in->suppress[0]));
	nx_kt_free_grave(nx, &in->graveyard[1]);
	in->graveyard[1] = in->graveyard[0];
	in->graveyard[0] = NULL;
}

