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
 * (the "suppress" table, kept for two generations of at least SUP_KEEP_NS).
 *
 * The two halves of a move are paired by cookie.  A MOVED_FROM whose MOVED_TO
 * is not there is held (see "the hold" below): for at most NX_HOLD_NS from
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

#include "inotify.h"
#include "nx.h"
#include "scan.h"
#include "ktree.h"
#include "treepath.h"

#define READ_BUF (64 * 1024)
/* A first half is given up once this many later records were read without
 * its second half (GLib's rule); its second half is not looked for further. */
#define HOLD_DISTANCE 128
/* The changes of a directory's entries: each is queued while the directory's
 * lock is held (see sync_holds). */
#define DIR_CHANGES (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO)

struct kwatch {
	int kwd;
	uint32_t kmask;       /* what the kernel watch asks for (never narrowed) */
	struct nx_node *subs; /* nodes of this inode, linked by knext */
	struct nx_watch *guards; /* watches whose root is in this directory (see guard()) */
	uint64_t born;        /* stream offset of the first record queued after it was added */
	bool kept;            /* a repair may use it again: not released yet (see ino_repair) */
};

/* A watch's own state (its bdata). */
struct iwatch {
	/* Recursive: the root, O_PATH, held; or, when the root is the root of
	 * a mount, its parent (so that the library does not keep that
	 * filesystem busy) and rootname its name there.  Else -1. */
	int rootfd;
	char *rootname;
	dev_t dev;              /* the root's */
	ino_t ino;
	uint64_t mnt_id;        /* the mount the root was reached through; 0: unknown */
	bool isdir;
	struct kwatch *guard;   /* recursive: the kernel watch of the root's parent */
	struct nx_watch *gnext; /* next watch of guard->guards */
	uint64_t since;         /* records before this stream offset are not its own (see stale()) */
};

/* When the bytes of buf up to end were read. */
struct read_mark {
	size_t end;
	uint64_t ns;
};

/* A directory that is in the table but not watched yet (see add_subdir). */
struct deferred {
	struct nx_node *node;
	bool report;
	int tries;    /* times its parent could not be reached */
};

struct ino {
	int fd;
	int timerfd;
	int mnt_wake;         /* /proc/self/mountinfo in the epoll set: wakes the application */
	int mnt_check;        /* a private one, polled by process() itself */
	bool proc_fd;         /* /proc/self/fd/N works for inotify_add_watch */
	bool holding;         /* a record in buf waits for a later one (a hold) */
	bool no_wait;         /* end every hold now (the timer cannot be armed) */
	bool flush;           /* this process() ends every hold (NX_PROCESS_FLUSH) */
	bool timer_armed;
	bool retrying;        /* in retry_deferred(): conflicts are settled, not deferred */
	bool block_all;       /* this pass: every later record waits */
	bool repairing;       /* in ino_repair(): no watch ends (see check_root) */
	bool recheck;         /* a repair found a root gone: check the roots when dry */
	uint64_t hold_until;  /* the earliest end of the holds of the last pass */
	/* This pass over buf: the watches whose later events wait behind a
	 * record that waits, and the cookies of the MOVED_FROMs that wait. */
	struct nx_watch **blocked;
	size_t nblocked, blocked_cap;
	uint32_t wait_cookie[64];
	size_t nwait_cookie;
	/* This pass: the kernel watches of the MOVED_FROMs held, and the name
	 * of the last one of each (see sync_holds). */
	int held_kwd[16];
	char held_name[16][NAME_MAX + 1];
	size_t nheld_kwd;
	/* The last sync: what the records before sync_end in these kernel
	 * watches wait for is in the kernel queue, or not coming. */
	int sync_kwd[16];
	size_t nsync_kwd, sync_end;
	bool fed;             /* records came from nx_inotify_feed: never sync */
	/* When the records in buf were read, oldest first (the last mark
	 * grows when they are all taken: those records then end their holds
	 * sooner, never later). */
	struct read_mark reads[256];
	size_t nreads;
	size_t len;           /* bytes in buf not processed yet */
	size_t next;          /* where the records after the one being handled start */
	uint64_t stream;      /* bytes read from fd so far */
	uint64_t cur;         /* stream offset of the record being handled */
	struct nx_node *conflict; /* attach(): the node that has the directory already */
	struct nx_map kwatches; /* kernel wd -> struct kwatch */
	/* Events already reported or caused by the library itself:
	 * hash(kwatch or node, name, kind) -> count. */
	struct nx_map suppress[2]; /* [0]: this generation, [1]: the one before */
	struct nx_map mounts;      /* node where a mount begins inside a tree -> its mount id */
	struct nx_node *graveyard[2]; /* unlinked subtrees, of these generations */
	uint64_t generation_start;
	struct nx_node **vec[2];   /* scratch lists of subscribers */
	size_t vec_cap[2];
	struct deferred *deferred;
	size_t ndeferred, deferred_cap;
	/* [0], [1]: event paths; [2]: a walk's relative path; [3]: open_node() */
	char path[4][PATH_MAX];
	_Alignas(8) char buf[READ_BUF];
};

static struct ino *ino_of(const struct notifyx *nx)
{
	return nx->bdata;
}

static struct iwatch *iw_of(const struct nx_watch *w)
{
	return w->bdata;
}

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

static uint32_t node_mask(const struct nx_node *n)
{
	const struct nx_watch *w = n->watch;
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

/* ---- kernel watches ---- */

/* Adds mask to the kernel watch of kpath; NULL with errno on failure. */
static struct kwatch *kwatch_add(struct ino *in, const char *kpath, uint32_t mask)
{
	struct kwatch *kw;
	int kwd, queued;

	kwd = inotify_add_watch(in->fd, kpath, mask | IN_MASK_ADD);
	if (kwd < 0)
		return NULL;
	kw = nx_map_get(&in->kwatches, (uint64_t)kwd);
	if (!kw) {
		if (!(kw = calloc(1, sizeof(*kw))) ||
		    nx_map_put(&in->kwatches, (uint64_t)kwd, kw) < 0) {
			free(kw);
			inotify_rm_watch(in->fd, kwd);
			errno = ENOMEM;
			return NULL;
		}
		kw->kwd = kwd;
		if (ioctl(in->fd, FIONREAD, &queued) == 0)
			kw->born = in->stream + (uint64_t)queued;
	}
	kw->kmask |= mask & ~(IN_ONLYDIR | IN_DONT_FOLLOW);
	return kw;
}

/* The kernel watch goes when nothing uses it any more. */
static void kwatch_release(struct ino *in, struct kwatch *kw)
{
	if (kw->subs || kw->guards || kw->kept)
		return;
	inotify_rm_watch(in->fd, kw->kwd); /* EINVAL if the kernel dropped it already */
	nx_map_del(&in->kwatches, (uint64_t)kw->kwd);
	free(kw);
}

static int attach(struct ino *in, struct nx_node *n, const char *kpath, uint32_t extra)
{
	struct kwatch *kw = kwatch_add(in, kpath, node_mask(n) | extra);

	if (!kw)
		return -1;
	/* A directory the watch knows already under another name: the name
	 * was reached through moves not read yet (see walk()).  (A directory
	 * seen twice through a bind mount inside the tree is watched at one
	 * place only.) */
	for (struct nx_node *s = kw->subs; s; s = s->knext) {
		if (s->watch == n->watch && !nx_within(n, s)) {
			in->conflict = s;
			errno = EEXIST;
			return -1;
		}
	}
	n->kref = kw;
	n->knext = kw->subs;
	kw->subs = n;
	return 0;
}

static void detach(struct ino *in, struct nx_node *n)
{
	struct kwatch *kw = n->kref;
	struct nx_node **pp;

	if (!kw)
		return;
	for (pp = &kw->subs; *pp; pp = &(*pp)->knext) {
		if (*pp == n) {
			*pp = n->knext;
			break;
		}
	}
	n->kref = NULL;
	n->knext = NULL;
	kwatch_release(in, kw);
}

static void bury_one(void *ctx, struct nx_node *n)
{
	struct ino *in = ctx;

	detach(in, n);
	if (in->mounts.len)
		nx_map_del(&in->mounts, (uint64_t)(uintptr_t)n);
}

/* Takes n and its subtree out of the tree; freed with the generation after
 * this one (see dry_point), so that lists of subscribers being walked,
 * suppression entries and deferred directories naming them stay valid. */
static void bury(struct notifyx *nx, struct nx_node *n)
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

static void unguard(struct ino *in, struct nx_watch *w)
{
	struct iwatch *iw = iw_of(w);
	struct kwatch *kw = iw ? iw->guard : NULL;

	if (!kw)
		return;
	for (struct nx_watch **pp = &kw->guards; *pp; pp = &iw_of(*pp)->gnext) {
		if (*pp == w) {
			*pp = iw->gnext;
			break;
		}
	}
	iw->guard = NULL;
	iw->gnext = NULL;
	kwatch_release(in, kw);
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
static bool check_root(struct notifyx *nx, struct nx_watch *w)
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
static int guard(struct notifyx *nx, struct nx_watch *w, bool at_add)
{
	struct ino *in = ino_of(nx);
	struct iwatch *iw = iw_of(w);
	struct stat pst, rst;
	struct kwatch *kw;
	char kpath[32];
	int pfd, err = 0;

	unguard(in, w);
	if (iw->rootname) /* a mount root cannot be removed or moved: no guard */
		return 0;
	pfd = openat(iw->rootfd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (pfd < 0 || fstat(pfd, &pst) < 0 || fstat(iw->rootfd, &rst) < 0) {
		err = errno;
	} else if (pst.st_dev != rst.st_dev || pst.st_ino != rst.st_ino) { /* "/" has no parent */
		snprintf(kpath, sizeof(kpath), "/proc/self/fd/%d", pfd);
		if ((kw = kwatch_add(in, kpath, IN_DELETE | IN_ONLYDIR))) {
			iw->guard = kw;
			iw->gnext = kw->guards;
			kw->guards = w;
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
	check_root(nx, w); /* removed before the guard was set */
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
static void hold_mount_parent(struct ino *in, struct iwatch *iw)
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

enum { SUP_CREATE = 1, SUP_OPEN, SUP_ACCESS, SUP_CLOSE };

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

static bool sup_take(struct ino *in, const void *obj, const char *name, size_t len, int kind)
{
	uint64_t key = nx_kt_key(obj, name, len, kind);

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

static void too_long(struct notifyx *nx, struct nx_node *n)
{
	nx_kt_too_long(nx, n, ino_of(nx)->path[0]);
}

/* The path of n's entry name, relative to the watch root, in in->path[i]. */
static size_t entry_path(struct ino *in, const struct nx_node *n, const char *name, size_t nlen,
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
	const struct nx_watch *w = n->watch;
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
static int open_node(struct notifyx *nx, struct nx_node *n)
{
	struct ino *in = ino_of(nx);
	struct kwatch *kw = n->kref;
	const struct iwatch *iw = iw_of(n->watch);
	char kpath[32];
	int fd, kwd;

	if (!kw || !iw || (iw->rootfd < 0 && n->parent)) {
		errno = ESTALE;
		return -1;
	}
	if (iw->rootfd < 0) /* a watch that holds nothing: its root by path */
		fd = open(n->watch->abspath, O_PATH | O_DIRECTORY | O_CLOEXEC);
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
	if (kwd >= 0 && !nx_map_get(&in->kwatches, (uint64_t)kwd))
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
		if (attach(in, n, kpath, IN_ONLYDIR) == 0 || errno != ENOENT)
			return n->kref ? 0 : -1;
		in->proc_fd = false; /* no /proc here: watch by path */
	}
	if (!n->parent)
		return attach(in, n, n->watch->abspath, IN_ONLYDIR);
	if (abs_path(in, n->parent, n->name, n->name_len) == SIZE_MAX)
		return errno = ENAMETOOLONG, -1;
	return attach(in, n, in->path[0], IN_ONLYDIR | IN_DONT_FOLLOW);
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

	if (pending_arrival(in, n->parent, n->name, n->name_len)) {
		errno = EEXIST;
		return false;
	}
	bury(nx, in->conflict);
	return true;
}

/* The mount directory node n was reached through. */
static uint64_t node_mount(const struct ino *in, const struct nx_node *n)
{
	void *id;

	for (; n->parent; n = n->parent)
		if ((id = nx_map_get(&in->mounts, (uint64_t)(uintptr_t)n)))
			return (uint64_t)(uintptr_t)id;
	return iw_of(n->watch)->mnt_id;
}

/* Remembers where a mount begins inside a tree (n, open at fd), for
 * check_mounts(). */
static void note_mount(struct ino *in, struct nx_node *n, int fd)
{
	uint64_t id = nx_mount_id(fd);

	if (id && id != node_mount(in, n->parent))
		nx_map_put(&in->mounts, (uint64_t)(uintptr_t)n, (void *)(uintptr_t)id);
	else if (in->mounts.len)
		nx_map_del(&in->mounts, (uint64_t)(uintptr_t)n);
}

/* Directory node n, in the table, is to be watched and listed once the
 * kernel queue has been read dry (see add_subdir).  When that cannot be
 * remembered, n leaves the table and the watch has lost events. */
static void defer(struct notifyx *nx, struct nx_node *n, bool report, int tries)
{
	struct ino *in = ino_of(nx);

	if (in->ndeferred == in->deferred_cap) {
		size_t cap = in->deferred_cap ? in->deferred_cap * 2 : 8;
		struct deferred *v = realloc(in->deferred, cap * sizeof(*v));
		if (!v) {
			nx_lost(nx, n->watch);
			bury(nx, n);
			return;
		}
		in->deferred = v;
		in->deferred_cap = cap;
	}
	in->deferred[in->ndeferred++] = (struct deferred){ .node = n, .report = report, .tries = tries };
}

static void note_read(struct ino *in);

/*
 * Appends to buf what the kernel has queued now, so that the records not
 * handled yet include every change made before this call (some made later
 * may come along).  False when that does not fit in buf.  Records fed by a
 * test have no kernel queue behind them.
 */
static bool read_more(struct ino *in)
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
		note_read(in);
		queued -= (int)n;
	}
	return true;
}

/*
 * Do records read but not handled yet change entry n->name of n's parent
 * (create, delete, move it away or onto it, exchange it)?  Then what that
 * name leads to now is not what the table calls n: the table follows those
 * records first.
 */
static bool name_touched(const struct ino *in, const struct nx_node *n)
{
	const struct kwatch *kw = n->parent ? n->parent->kref : NULL;
	struct inrec r;

	/* No record queued since kw was added has been read: none can be kw's. */
	if (!kw || kw->born >= in->stream)
		return false;
	for (size_t pos = in->next; nx_inotify_decode(in->buf, in->len, pos, &r); pos += r.size)
		if (r.wd == kw->kwd && (r.mask & DIR_CHANGES) && r.name_len == n->name_len &&
		    !memcmp(r.name, n->name, r.name_len))
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

	if (!wk->fatal && name_touched(in, n)) {
		defer(nx, n, wk->report, 0);
		return NX_KT_SKIP;
	}
	if ((fd = open_dir(iw_of(n->watch), pfd, name, rel)) < 0)
		return -1;
	if (nx_kt_other_dev(n, fd)) {
		close(fd);
		bury(nx, n);
		return NX_KT_SKIP;
	}
	attached = attach_fd(nx, n, fd) == 0;
	err = errno;
	if (!wk->fatal && n->parent && (!read_more(in) || name_touched(in, n))) {
		/* Records of changes made before the directory was opened may
		 * have come only now: the table follows them first. */
		detach(in, n);
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
			bury(nx, n);
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
		sup_listing(in, n->parent->kref, n->name, n->name_len, IN_OPEN, calls);
}

/*
 * Watches directory name (relative to pfd, the directory of n's parent, or
 * found by path when pfd is -1), which is node n, then lists it and does the
 * same for its subdirectories (see nx_kt_walk).  Outside fatal, a directory
 * whose name records not handled yet change is deferred (see add_subdir).
 */
static int walk(struct notifyx *nx, struct nx_node *n, int pfd, const char *name, char *rel,
		size_t rel_len, bool report, bool fatal)
{
	struct ino *in = ino_of(nx);
	struct nx_kt_walk wk = { .nx = nx, .report = report, .fatal = fatal,
				 .reported = &in->suppress[0], .reported_kind = SUP_CREATE,
				 .scratch = in->path[1], .enter = enter, .listed = listed,
				 .bury = bury };

	return nx_kt_walk(&wk, n, pfd, name, rel, rel_len, 0);
}

/* Watches and lists c, a directory node that is in the table but not
 * watched yet, or defers it (see add_subdir).  tries: the retries that
 * found its parent unreachable. */
static void watch_new(struct notifyx *nx, struct nx_node *c, bool report, int tries)
{
	struct ino *in = ino_of(nx);
	char *rel = in->path[2];
	size_t len = entry_path(in, c->parent, c->name, c->name_len, 2);
	int pfd;

	if (len == SIZE_MAX) { /* its parent was renamed meanwhile */
		too_long(nx, c->parent);
		bury(nx, c);
		return;
	}
	if (name_touched(in, c)) {
		defer(nx, c, report, tries);
		return;
	}
	if ((pfd = open_node(nx, c->parent)) < 0) {
		if (errno == ENOSPC || errno == ENOMEM || errno == EMFILE || errno == ENFILE ||
		    errno == EACCES || errno == EPERM || errno == EIO) {
			/* Not a move of events not read yet (ESTALE, ENOENT, or
			 * openat2's EAGAIN and EXDEV under a rename): the parent
			 * cannot be checked, nor the watch be sure. */
			nx_lost(nx, c->watch);
			bury(nx, c);
		} else if (in->retrying && ++tries >= 3) {
			/* Still unreachable with nothing left to read. */
			nx_kt_error(nx, c->watch, rel, ENOENT);
			bury(nx, c);
		} else {
			defer(nx, c, report, tries);
		}
		return;
	}
	if (walk(nx, c, pfd, c->name, rel, len, report, false) < 0)
		nx_lost(nx, c->watch);
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
static void add_subdir(struct notifyx *nx, struct nx_node *n, const char *name, size_t nlen,
		       bool report)
{
	struct nx_watch *w = n->watch;
	struct nx_node *c;

	if (!(w->flags & NOTIFYX_WATCH_RECURSIVE) || w->ended || n->dead ||
	    nx_node_find(&nx->paths, n, name, nlen))
		return;
	if (entry_path(ino_of(nx), n, name, nlen, 2) == SIZE_MAX)
		too_long(nx, n);
	else if (!(c = nx_node_add(&nx->paths, n, name, nlen)))
		nx_lost(nx, w);
	else
		watch_new(nx, c, report, 0);
}

/* Directories that were not watched when they appeared. */
static void retry_deferred(struct notifyx *nx, bool final)
{
	struct ino *in = ino_of(nx);
	struct deferred *v = in->deferred;
	size_t n = in->ndeferred;

	in->deferred = NULL; /* watch_new defers again into a fresh list */
	in->ndeferred = in->deferred_cap = 0;
	in->retrying = final;
	for (size_t i = 0; i < n; i++) {
		struct nx_node *c = v[i].node;
		if (!c->dead && !c->watch->ended && !c->kref)
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
static void dry_point(struct notifyx *nx)
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

/* ---- dispatching kernel events ---- */

/* The record being handled was queued before a repair of n's watch read
 * the tree again (ino_repair): what it says is in that reading already, and
 * the table it was queued for is gone. */
static bool stale(const struct ino *in, const struct nx_node *n)
{
	const struct iwatch *iw = iw_of(n->watch);

	return iw && in->cur < iw->since;
}

/* Copies the live subscribers of kw into scratch list i. */
static size_t subscribers(struct notifyx *nx, const struct kwatch *kw, int i)
{
	struct ino *in = ino_of(nx);
	size_t n = 0;

	for (struct nx_node *s = kw ? kw->subs : NULL; s; s = s->knext) {
		if (stale(in, s))
			continue;
		if (n == in->vec_cap[i]) {
			size_t cap = n ? n * 2 : 8;
			struct nx_node **v = realloc(in->vec[i], cap * sizeof(*v));
			if (!v) { /* the rest miss this event: say so */
				for (; s; s = s->knext)
					nx_lost(nx, s->watch);
				break;
			}
			in->vec[i] = v;
			in->vec_cap[i] = cap;
		}
		in->vec[i][n++] = s;
	}
	return n;
}

/* The filesystem mounted at directory node n (not a root) went: the mount
 * point is watched as it now is, and what vanished is not listed. */
static void uncover(struct notifyx *nx, struct nx_node *n)
{
	struct ino *in = ino_of(nx);
	struct nx_watch *w = n->watch;
	int rfd = open_node(nx, w->root), pfd;
	size_t len;

	while (n->child)
		bury(nx, n->child);
	detach(in, n);
	nx_map_del(&in->mounts, (uint64_t)(uintptr_t)n);
	if (rfd < 0)
		return; /* the root's own filesystem went: UNMOUNT follows */
	close(rfd);
	len = nx_node_path(n, in->path[2], PATH_MAX);
	if (len != SIZE_MAX && (pfd = open_node(nx, n->parent)) >= 0) {
		walk(nx, n, pfd, n->name, in->path[2], len, false, false);
		close(pfd);
	}
	nx_lost(nx, w);
}

static void self_event(struct notifyx *nx, struct nx_node *n, uint32_t mask)
{
	struct nx_watch *w = n->watch;
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
			guard(nx, w, false); /* its parent changed */
	} else if (nx_inotify_event(mask)) {
		nx_emit(nx, w, nx_inotify_event(mask), flags, 0, 0, "", 0, NULL, 0);
	}
}

/* A filesystem left the mount table (umount -l while busy gives no
 * IN_UNMOUNT: the kernel sends it when the filesystem is shut down, which a
 * descriptor held anywhere, the library's own included, puts off): a root
 * on it ends with UNMOUNT, a mount inside a tree is uncovered. */
static void check_mounts(struct notifyx *nx)
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
		if (!(n = gone[i])->dead && !n->watch->ended)
			uncover(nx, n);
	free(gone);
}

static void child_event(struct notifyx *nx, struct nx_node *n, const struct inrec *r)
{
	struct ino *in = ino_of(nx);
	struct nx_watch *w = n->watch;
	bool isdir = r->mask & IN_ISDIR;
	uint32_t flags = isdir ? NOTIFYX_EVENT_ISDIR : 0;
	size_t len = entry_path(in, n, r->name, r->name_len, 0);

	if (len == SIZE_MAX) {
		too_long(nx, n);
		return;
	}
	if (r->mask & IN_CREATE) {
		if (sup_take(in, n, r->name, r->name_len, SUP_CREATE))
			return; /* a listing reported it already */
		nx_emit(nx, w, NOTIFYX_CREATE, flags, 0, 0, in->path[0], len, NULL, 0);
		if (isdir && !nx_excluded(nx, w, in->path[0], r->name))
			add_subdir(nx, n, r->name, r->name_len, true);
	} else if (r->mask & IN_DELETE) {
		sup_take(in, n, r->name, r->name_len, SUP_CREATE);
		nx_emit(nx, w, NOTIFYX_DELETE, flags, 0, 0, in->path[0], len, NULL, 0);
		if (isdir)
			bury(nx, nx_node_find(&nx->paths, n, r->name, r->name_len));
	} else if (nx_inotify_event(r->mask)) {
		nx_emit(nx, w, nx_inotify_event(r->mask), flags, 0, 0, in->path[0], len, NULL, 0);
	}
}

/* The library's own listing opened or read this directory. */
static bool own_access(struct ino *in, const struct kwatch *kw, const struct inrec *r)
{
	int kind = (r->mask & IN_OPEN) ? SUP_OPEN : (r->mask & IN_ACCESS) ? SUP_ACCESS
		 : (r->mask & IN_CLOSE_NOWRITE) ? SUP_CLOSE : 0;

	return kind && (r->mask & IN_ISDIR) && sup_take(in, kw, r->name, r->name_len, kind);
}

static void plain_event(struct notifyx *nx, const struct inrec *r)
{
	struct ino *in = ino_of(nx);
	struct kwatch *kw = nx_map_get(&in->kwatches, (uint64_t)r->wd);
	size_t count;

	if (!kw || own_access(in, kw, r))
		return;
	if (r->mask & IN_IGNORED) {
		/* The kernel dropped this watch (its inode is gone). */
		count = subscribers(nx, kw, 0);
		for (size_t i = 0; i < count; i++) {
			struct nx_node *n = in->vec[0][i];
			if (n->dead)
				continue;
			detach(in, n);
			if (!n->parent)
				nx_end_watch(nx, n->watch);
		}
		/* The parent of held roots went (they were moved out of it
		 * first): guard them where they are now. */
		while ((kw = nx_map_get(&in->kwatches, (uint64_t)r->wd)) && kw->guards)
			guard(nx, kw->guards, false);
		return;
	}
	count = subscribers(nx, kw, 0);
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
		kw = nx_map_get(&in->kwatches, (uint64_t)r->wd);
		for (w = kw ? kw->guards : NULL; w && !(again = check_root(nx, w));)
			w = iw_of(w)->gnext;
	}
}

/* ---- moves ---- */

struct move {
	const struct kwatch *from, *to;
	const char *fname, *tname;
	size_t flen, tlen;
	bool isdir, exchange;
	bool to_isdir; /* exchange: the type of the entry that was at tname */
	uint32_t cookie;
	int only;      /* 0: the whole move; ONLY_DEPARTURES or ONLY_ARRIVALS of it */
};

enum { ONLY_DEPARTURES = 1, ONLY_ARRIVALS };

static bool same_watch(const struct nx_node *a, const struct nx_node *b)
{
	return a->watch == b->watch;
}

static void arrived(struct nx_kt_rename *r, struct nx_node *n, const char *name, size_t len,
		    bool theirs, bool unseen)
{
	(void)theirs;
	add_subdir(r->nx, n, name, len, !unseen || (n->watch->flags & NOTIFYX_WATCH_LIST));
}

static void rename_in_watch(struct notifyx *nx, struct nx_node *a, struct nx_node *b,
			    const struct move *m)
{
	struct ino *in = ino_of(nx);
	struct nx_kt_rename r = {
		.a = a, .b = b, .fname = m->fname, .flen = m->flen, .tname = m->tname,
		.tlen = m->tlen, .isdir = m->isdir, .to_isdir = m->to_isdir,
		.exchange = m->exchange, .scratch = { in->path[0], in->path[1] },
		.arrived = arrived, .bury = bury, .nx = nx,
	};

	sup_take(in, a, m->fname, m->flen, SUP_CREATE);
	nx_kt_rename(&r);
}

/*
 * A directory arrives (a lone MOVED_TO) where the table has a node already.
 * Either the arrival replaced that directory, or the node is the arriving
 * directory itself: a listing made while it was being moved in found it
 * there (and listed it; it is not listed again).  Its own kernel watch tells:
 * one added after the MOVED_TO was queued is on what arrived, and the kernel
 * queues the IN_MOVE_SELF of a moved directory right after the MOVED_TO.
 */
static bool arrived_known(const struct ino *in, const struct nx_node *n)
{
	const struct kwatch *kw = n->kref;
	struct inrec r;

	if (kw && kw->born > in->cur)
		return true;
	for (size_t pos = in->next; kw && nx_inotify_decode(in->buf, in->len, pos, &r); pos += r.size) {
		if (r.mask & (IN_MOVED_FROM | IN_MOVED_TO))
			break; /* the next move: its MOVE_SELF would be another's */
		if (r.wd == kw->kwd && !r.name_len && (r.mask & IN_MOVE_SELF))
			return true;
	}
	return false;
}

static void do_move(struct notifyx *nx, const struct move *m)
{
	struct ino *in = ino_of(nx);
	size_t nf = subscribers(nx, m->from, 0), nt = subscribers(nx, m->to, 1);
	struct nx_node **from = in->vec[0], **to = in->vec[1];

	for (size_t i = 0; i < nf && m->only != ONLY_ARRIVALS; i++) {
		struct nx_node *a = from[i], *b = NULL;
		if (a->dead)
			continue;
		for (size_t j = 0; j < nt && !b; j++)
			if (!to[j]->dead && same_watch(a, to[j]))
				b = to[j];
		if (b) {
			rename_in_watch(nx, a, b, m);
			continue;
		}
		size_t len = entry_path(in, a, m->fname, m->flen, 0);
		if (len == SIZE_MAX) {
			too_long(nx, a);
			continue;
		}
		sup_take(in, a, m->fname, m->flen, SUP_CREATE);
		nx_emit(nx, a->watch, NOTIFYX_MOVED_OUT, m->isdir ? NOTIFYX_EVENT_ISDIR : 0,
			nt ? m->cookie : 0, 0, in->path[0], len, NULL, 0);
		if (m->isdir)
			bury(nx, nx_node_find(&nx->paths, a, m->fname, m->flen));
	}
	for (size_t j = 0; j < nt && m->only != ONLY_DEPARTURES; j++) {
		struct nx_node *b = to[j];
		bool paired = false;
		if (b->dead)
			continue;
		for (size_t i = 0; i < nf && !paired; i++)
			paired = same_watch(from[i], b);
		if (paired)
			continue;
		size_t len = entry_path(in, b, m->tname, m->tlen, 0);
		if (len == SIZE_MAX) {
			too_long(nx, b);
			continue;
		}
		struct nx_watch *w = b->watch;
		struct nx_node *old = m->isdir ? nx_node_find(&nx->paths, b, m->tname, m->tlen) : NULL;
		bool known = old && arrived_known(in, old);
		if (old && !known)
			bury(nx, old); /* replaced */
		nx_emit(nx, w, NOTIFYX_MOVED_IN, m->isdir ? NOTIFYX_EVENT_ISDIR : 0,
			nf ? m->cookie : 0, 0, in->path[0], len, NULL, 0);
		if (m->isdir && !known && !nx_excluded(nx, w, in->path[0], in->path[0] + len - m->tlen))
			add_subdir(nx, b, m->tname, m->tlen, w->flags & NOTIFYX_WATCH_LIST);
	}
}

/* Marks the record at pos as consumed (its pair was handled earlier). */
static void consume(struct ino *in, size_t pos)
{
	struct inotify_event ev;

	memcpy(&ev, in->buf + pos, sizeof(ev));
	ev.mask = 0;
	memcpy(in->buf + pos, &ev, sizeof(ev));
}

/* The header of the record at pos, when the whole record is in buf. */
static bool peek(const struct ino *in, size_t pos, struct inotify_event *ev)
{
	if (in->len - pos < sizeof(*ev))
		return false;
	memcpy(ev, in->buf + pos, sizeof(*ev));
	return ev->len <= in->len - pos - sizeof(*ev);
}

/* Finds the MOVED_TO of the MOVED_FROM from among the HOLD_DISTANCE records
 * after pos (the record after from); 0 when not there.  It comes before any
 * later change of from's directory (see sync_holds): the search ends there. */
static size_t find_moved_to(const struct ino *in, size_t pos, const struct inrec *from,
			    struct inrec *out)
{
	struct inotify_event ev;

	for (int n = 0; n < HOLD_DISTANCE && peek(in, pos, &ev); n++, pos += sizeof(ev) + ev.len) {
		if ((ev.mask & IN_MOVED_TO) && ev.cookie == from->cookie)
			return nx_inotify_decode(in->buf, in->len, pos, out) ? pos : 0;
		if (ev.wd == from->wd && (ev.mask & DIR_CHANGES))
			return 0;
	}
	return 0;
}

/* True when each watch that sees one half of a move sees the other: an
 * exchange is reported as one event only then (see BUGS in notifyx(7)). */
static bool within_watches(struct notifyx *nx, const struct kwatch *a, const struct kwatch *b)
{
	struct ino *in = ino_of(nx);
	size_t na = subscribers(nx, a, 0), nb = subscribers(nx, b, 1);

	for (size_t i = 0; i < na + nb; i++) {
		struct nx_node *x = i < na ? in->vec[0][i] : in->vec[1][i - na];
		struct nx_node **other = i < na ? in->vec[1] : in->vec[0];
		size_t nother = i < na ? nb : na, j;
		for (j = 0; j < nother && !same_watch(x, other[j]); j++)
			;
		if (j == nother)
			return false;
	}
	return true;
}

/* Does some watch subscribed to kw exclude its entry name? */
static bool hides(struct notifyx *nx, const struct kwatch *kw, const char *name, size_t len)
{
	struct ino *in = ino_of(nx);

	for (struct nx_node *s = kw->subs; s; s = s->knext) {
		size_t plen = s->watch->nexclude ? entry_path(in, s, name, len, 1) : SIZE_MAX;
		if (plen != SIZE_MAX && nx_excluded(nx, s->watch, in->path[1], in->path[1] + plen - len))
			return true;
	}
	return false;
}

/* Is there an entry name in the directory of kernel watch kw now?  1 or 0;
 * -1 when that directory cannot be reached by its path now. */
static int entry_state(struct notifyx *nx, const struct kwatch *kw, const char *name, size_t len)
{
	char buf[NAME_MAX + 1];
	struct stat st;
	int fd = -1, ret;

	for (struct nx_node *s = kw ? kw->subs : NULL; s && fd < 0 && len <= NAME_MAX; s = s->knext)
		if (!s->dead)
			fd = open_node(nx, s);
	if (fd < 0)
		return -1;
	memcpy(buf, name, len);
	buf[len] = '\0';
	ret = fstatat(fd, buf, &st, AT_SYMLINK_NOFOLLOW) == 0;
	close(fd);
	return ret;
}

/* Two non-directories that swapped names reach inotify as a rename onto an
 * existing name and a rename back, reported as two RENAMEs (API.md).  Where
 * a watch sees only one of the names, the two readings differ for it (the
 * name it sees stays, or goes): there the state decides, an exchange when
 * the names seen exist now. */
/* Whether name is in kw's directory once the records before pos are applied:
 * told by the next record read that changes it (read on first: what
 * the kernel queued since counts), else by the directory as it is now; -1
 * when neither can tell (the directory moved, by events not read yet). */
static int there_at(struct notifyx *nx, const struct kwatch *kw, const char *name, size_t len,
		    size_t pos)
{
	struct ino *in = ino_of(nx);
	struct inrec n;

	read_more(in);
	for (; nx_inotify_decode(in->buf, in->len, pos, &n); pos += n.size) {
		if (n.wd != kw->kwd || !(n.mask & DIR_CHANGES) || n.name_len != len ||
		    memcmp(n.name, name, len))
			continue;
		if (!(n.mask & IN_MOVED_TO))
			return (n.mask & (IN_DELETE | IN_MOVED_FROM)) != 0;
		/* An arrival: onto the name when it is the first half of an
		 * exchange (the departure of that name follows, with the next
		 * cookie), else the name was free. */
		struct inrec f = { 0 };
		for (pos += n.size; nx_inotify_decode(in->buf, in->len, pos, &f); pos += f.size)
			if (f.mask && !(f.mask & IN_MOVE_SELF))
				break;
		return pos < in->len && (f.mask & IN_MOVED_FROM) && f.wd == n.wd &&
		       f.cookie == n.cookie + 1 && f.name_len == len && !memcmp(f.name, name, len);
	}
	return entry_state(nx, kw, name, len);
}

/* The pair (from, to) and its reverse pair rev (second half at after - its
 * size) between two files: an exchange, or a rename onto an existing name
 * and one back?  Both names are there after an exchange. */
static bool files_exchanged(struct notifyx *nx, const struct inrec *from, const struct inrec *to,
			    const struct inrec *rev, size_t after)
{
	struct ino *in = ino_of(nx);
	const struct kwatch *a = nx_map_get(&in->kwatches, (uint64_t)from->wd);
	const struct kwatch *b = nx_map_get(&in->kwatches, (uint64_t)to->wd);
	int sa, sb;

	if (!a || !b)
		return false;
	bool ha = hides(nx, a, from->name, from->name_len);
	bool hb = hides(nx, b, to->name, to->name_len);
	if (!ha && !hb && within_watches(nx, a, b))
		return false;
	/* A hidden name may have gone since without an event: only the names
	 * seen count. */
	sa = ha ? 1 : there_at(nx, a, from->name, from->name_len, after);
	sb = hb ? 1 : there_at(nx, b, to->name, to->name_len, after);
	if (sa < 0 || sb < 0) /* the two renames of an exchange take consecutive cookies */
		return sa && sb && rev->cookie == from->cookie + 1;
	return sa && sb;
}

/* After the pair (from, to) of an exchange, the kernel queues the reverse
 * pair; MOVE_SELF records of the moved entries may come between. */
static size_t find_exchange(struct notifyx *nx, size_t pos, const struct inrec *from,
			    const struct inrec *to, bool *incomplete, bool *to_isdir,
			    uint32_t *cookie)
{
	struct ino *in = ino_of(nx);
	struct inrec r, t;

	*incomplete = false;
	for (; nx_inotify_decode(in->buf, in->len, pos, &r); pos += r.size) {
		if (r.mask == 0 || (!r.name_len && (r.mask & IN_MOVE_SELF)))
			continue;
		if (!(r.mask & IN_MOVED_FROM) || r.wd != to->wd || r.name_len != to->name_len ||
		    memcmp(r.name, to->name, r.name_len))
			return 0;
		size_t tpos = find_moved_to(in, pos + r.size, &r, &t);
		if (!tpos) {
			*incomplete = true;
			return 0;
		}
		if (t.wd != from->wd || t.name_len != from->name_len || memcmp(t.name, from->name, t.name_len))
			return 0;
		/* Entries of different types can only have been exchanged, and a
		 * directory replaced by a rename would have ended its own watch. */
		if (!((r.mask ^ from->mask) & IN_ISDIR) && !(r.mask & IN_ISDIR) &&
		    !files_exchanged(nx, from, to, &r, tpos + t.size))
			return 0;
		*to_isdir = r.mask & IN_ISDIR;
		*cookie = r.cookie;
		consume(in, pos);
		consume(in, tpos);
		return pos;
	}
	*incomplete = true;
	return 0;
}

/* ---- the hold ----
 *
 * A record that needs a later one (the second half of a move, or the
 * departure of an exchange with a place outside the watches) waits for it:
 * at most NX_HOLD_NS from the moment it was read, and no longer once
 * HOLD_DISTANCE later records have been read.  Records read together wait
 * together, so N lone moves cost one wait, not N.  Each pass over buf starts
 * from its first record; a record that waits "blocks" the watches it
 * concerns for the rest of the pass, so that their later records wait
 * behind it (never overtaking it), while those of other watches go on. */

/* The bytes up to in->len were just read. */
static void note_read(struct ino *in)
{
	size_t max = sizeof(in->reads) / sizeof(in->reads[0]);

	if (in->nreads && in->reads[in->nreads - 1].end >= in->len)
		return;
	if (in->nreads == max)
		in->reads[max - 1].end = in->len;
	else
		in->reads[in->nreads++] = (struct read_mark){ in->len, nx_now_ns() };
}

static uint64_t read_at(const struct ino *in, size_t pos)
{
	for (size_t i = 0; i < in->nreads; i++)
		if (pos < in->reads[i].end)
			return in->reads[i].ns;
	return nx_now_ns();
}

/* The first used bytes of buf were handled: they leave it. */
static void drop_front(struct ino *in, size_t used)
{
	size_t j = 0;

	memmove(in->buf, in->buf + used, in->len - used);
	in->len -= used;
	for (size_t i = 0; i < in->nreads; i++) {
		if (in->reads[i].end > used) {
			in->reads[j] = in->reads[i];
			in->reads[j++].end -= used;
		}
	}
	in->nreads = j;
	in->sync_end = in->sync_end > used ? in->sync_end - used : 0;
	if (!in->sync_end)
		in->nsync_kwd = 0;
}

static bool has_kwd(const int *v, size_t n, int kwd)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == kwd)
			return true;
	return false;
}

/* The record at pos needs a later one that is not in buf: true while it
 * may still come (read on, or wait), false when it is time to go on
 * without it.  drained: the kernel had nothing more to give. */
static bool held(struct notifyx *nx, size_t pos, bool drained)
{
	struct ino *in = ino_of(nx);
	uint64_t until = read_at(in, pos) + NX_HOLD_NS;
	struct inotify_event ev;
	int later = -1; /* the records read after it */
	struct inrec r;
	bool synced = drained && pos < in->sync_end;

	if (!nx_inotify_decode(in->buf, in->len, pos, &r))
		return false;
	for (size_t p = pos; later < HOLD_DISTANCE && peek(in, p, &ev); p += sizeof(ev) + ev.len)
		if (later++ >= 0 && ev.wd == r.wd && (ev.mask & DIR_CHANGES) && (r.mask & IN_MOVED_FROM))
			return false; /* made under the lock the move held: see sync_holds */
	if (in->flush || in->no_wait || later >= HOLD_DISTANCE || (drained && nx_now_ns() >= until) ||
	    (synced && (r.mask & IN_MOVED_FROM) && has_kwd(in->sync_kwd, in->nsync_kwd, r.wd)))
		return false;
	if (!in->holding || until < in->hold_until)
		in->hold_until = until;
	in->holding = true;
	if (!(r.mask & IN_MOVED_FROM) || r.name_len > NAME_MAX)
		return true;
	size_t i = 0;
	while (i < in->nheld_kwd && in->held_kwd[i] != r.wd)
		i++;
	if (i == sizeof(in->held_kwd) / sizeof(in->held_kwd[0]))
		return true; /* not synced: ends by time or distance */
	in->nheld_kwd += i == in->nheld_kwd;
	in->held_kwd[i] = r.wd;
	memcpy(in->held_name[i], r.name, r.name_len);
	in->held_name[i][r.name_len] = '\0';
	return true;
}

/*
 * Ends the holds of MOVED_FROMs early where it can tell.  A rename queues
 * both of its halves while it holds the lock of the directory it moves from,
 * and every change of that directory's entries takes the same lock: so of the
 * MOVED_FROMs of one directory only the last can still wait for its second
 * half (a later change of that directory's entries in the stream shows it
 * has not), and only while that lock is held.  Looking up its old name takes the
 * lock (d_move() left no entry of that name in the dentry cache, and none can
 * appear while the lock is held); once that lookup returned, what the rename
 * queued is in the kernel queue, and a second half that the next read does
 * not find will not come.  (An exchange leaves the old name in the cache at
 * once: one split by the read exactly between its halves ends as at a
 * timeout, as two lone halves.)  Returns false when no directory could be
 * reached (the holds then end by time or distance only).
 */
static bool sync_holds(struct notifyx *nx)
{
	struct ino *in = ino_of(nx);
	struct stat st;

	in->nsync_kwd = 0;
	for (size_t i = 0; i < in->nheld_kwd; i++) {
		struct kwatch *kw = nx_map_get(&in->kwatches, (uint64_t)in->held_kwd[i]);
		struct nx_node *n = kw ? kw->subs : NULL;
		int pfd;

		while (n && n->dead)
			n = n->knext;
		if (!n || (pfd = open_node(nx, n)) < 0)
			continue;
		/* ENOENT is the usual answer: either answer comes from the lookup. */
		bool looked = fstatat(pfd, in->held_name[i], &st, AT_SYMLINK_NOFOLLOW) == 0 ||
			      errno == ENOENT;
		close(pfd);
		if (looked)
			in->sync_kwd[in->nsync_kwd++] = kw->kwd;
	}
	in->sync_end = in->nsync_kwd ? in->len : 0;
	return in->nsync_kwd > 0;
}

static bool watch_blocked(const struct ino *in, const struct nx_watch *w)
{
	for (size_t i = 0; i < in->nblocked; i++)
		if (in->blocked[i] == w)
			return true;
	return false;
}

static bool kwatch_blocked(const struct ino *in, const struct kwatch *kw)
{
	for (const struct nx_node *s = kw ? kw->subs : NULL; s; s = s->knext)
		if (!s->dead && watch_blocked(in, s->watch))
			return true;
	return false;
}

static void block_kwatch(struct ino *in, const struct kwatch *kw)
{
	for (const struct nx_node *s = kw ? kw->subs : NULL; s; s = s->knext) {
		if (s->dead || watch_blocked(in, s->watch))
			continue;
		if (in->nblocked == in->blocked_cap) {
			size_t cap = in->blocked_cap ? in->blocked_cap * 2 : 8;
			struct nx_watch **v = realloc(in->blocked, cap * sizeof(*v));
			if (!v) { /* no room to tell the watches apart: all wait */
				in->block_all = true;
				return;
			}
			in->blocked = v;
			in->blocked_cap = cap;
		}
		in->blocked[in->nblocked++] = s->watch;
	}
}

/* Must the record at pos wait behind one that waits? */
static bool must_wait(struct notifyx *nx, size_t pos, const struct inrec *r)
{
	struct ino *in = ino_of(nx);
	struct inrec to;
	size_t tpos;

	if (!in->nblocked && !in->nwait_cookie && !in->block_all)
		return false;
	if (in->block_all || (r->mask & IN_Q_OVERFLOW))
		return true;
	for (size_t i = 0; i < in->nwait_cookie && (r->mask & IN_MOVED_TO); i++)
		if (in->wait_cookie[i] == r->cookie)
			return true; /* its first half waits */
	if (kwatch_blocked(in, nx_map_get(&in->kwatches, (uint64_t)r->wd)))
		return true;
	/* A pair is reported in place of its first half: where the second
	 * half's watches wait, the whole move waits. */
	return (r->mask & IN_MOVED_FROM) &&
	       (tpos = find_moved_to(in, pos + r->size, r, &to)) &&
	       kwatch_blocked(in, nx_map_get(&in->kwatches, (uint64_t)to.wd));
}

/* The record at pos waits: so do the later records of its watches. */
static void wait_behind(struct notifyx *nx, size_t pos, const struct inrec *r)
{
	struct ino *in = ino_of(nx);
	struct inrec to;

	if (r->mask & IN_Q_OVERFLOW)
		in->block_all = true;
	block_kwatch(in, nx_map_get(&in->kwatches, (uint64_t)r->wd));
	if (!(r->mask & IN_MOVED_FROM))
		return;
	if (in->nwait_cookie == sizeof(in->wait_cookie) / sizeof(in->wait_cookie[0]))
		in->block_all = true;
	else
		in->wait_cookie[in->nwait_cookie++] = r->cookie;
	if (find_moved_to(in, pos + r->size, r, &to))
		block_kwatch(in, nx_map_get(&in->kwatches, (uint64_t)to.wd));
}

/* Handles the MOVED_FROM at pos.  Returns false when it must wait for more
 * of the stream. */
static bool moved_from(struct notifyx *nx, size_t pos, const struct inrec *r, bool drained)
{
	struct ino *in = ino_of(nx);
	struct inrec to;
	size_t tpos = find_moved_to(in, pos + r->size, r, &to);
	struct move m = {
		.from = nx_map_get(&in->kwatches, (uint64_t)r->wd),
		.fname = r->name, .flen = r->name_len,
		.isdir = r->mask & IN_ISDIR, .cookie = r->cookie,
	};

	if (!tpos) {
		if (held(nx, pos, drained))
			return false;
		do_move(nx, &m); /* its pair is not coming: a move out */
		return true;
	}
	bool incomplete = false, to_isdir = false;
	uint32_t rcookie = 0;
	m.to = nx_map_get(&in->kwatches, (uint64_t)to.wd);
	m.tname = to.name;
	m.tlen = to.name_len;
	if (!find_exchange(nx, tpos + to.size, r, &to, &incomplete, &to_isdir, &rcookie)) {
		if (incomplete && !drained)
			return false; /* read on: the reverse pair may follow */
		consume(in, tpos);
		do_move(nx, &m);
		return true;
	}
	consume(in, tpos);
	if (within_watches(nx, m.from, m.to)) {
		m.exchange = true;
		m.to_isdir = to_isdir;
		do_move(nx, &m);
		return true;
	}
	/* An exchange that some watch sees one side of: there it is a
	 * departure and an arrival at one name, the departure first. */
	struct move rev = {
		.from = m.to, .to = m.from, .fname = m.tname, .flen = m.tlen,
		.tname = m.fname, .tlen = m.flen, .isdir = to_isdir, .cookie = rcookie,
	};
	m.only = rev.only = ONLY_DEPARTURES;
	do_move(nx, &m);
	do_move(nx, &rev);
	m.only = rev.only = ONLY_ARRIVALS;
	do_move(nx, &m);
	do_move(nx, &rev);
	return true;
}

/*
 * Was entry r->name of r's directory there just before the record at pos?
 * The next record read that changes that name tells (a departure: it was;
 * an arrival: it was not); only when none does, the state now.  The state
 * alone would answer for a later moment, after changes whose records are
 * read but not handled yet.
 */
static bool there_after(struct notifyx *nx, size_t pos, const struct inrec *r, const struct inrec *f)
{
	struct ino *in = ino_of(nx);
	const struct kwatch *kw = nx_map_get(&in->kwatches, (uint64_t)r->wd);
	struct inrec n;
	size_t at = pos;
	int state;

	/* Two directories: the kernel queues the IN_MOVE_SELF of the one that
	 * left right after its MOVED_FROM (one fsnotify_move()).  When that
	 * is the directory the table has at the name, it was exchanged. */
	for (; (r->mask & IN_ISDIR) && nx_inotify_decode(in->buf, in->len, pos, &n); pos += n.size) {
		if (!n.mask)
			continue;
		const struct kwatch *sk = (n.mask & IN_MOVE_SELF) ?
			nx_map_get(&in->kwatches, (uint64_t)n.wd) : NULL;
		for (const struct nx_node *s = sk ? sk->subs : NULL; s; s = s->knext)
			if (!s->dead && s->parent && s->parent->kref == kw && s->name_len == r->name_len &&
			    !memcmp(s->name, r->name, r->name_len))
				return true;
		break;
	}
	if (kw && (state = there_at(nx, kw, r->name, r->name_len, at)) >= 0)
		return state;
	/* The directory moved since (events not read yet): the two halves of
	 * an exchange take consecutive cookies, two renames seldom do. */
	return f->cookie == r->cookie + 1;
}

/*
 * renameat2(outside, inside, RENAME_EXCHANGE) reaches a watched directory as
 * the arrival (MOVED_TO name) followed by the departure (MOVED_FROM of the
 * same name).  Applied in that order, the arrival would be undone; the
 * departure must come first.  It is surely an exchange when the two entries
 * differ in type; an entry moved in and moved on looks the same as an
 * exchange of two of one type, and the state tells them apart: after an
 * exchange the name is there (and when it went since, its DELETE follows).
 * Sets *fpos to the departure, or 0;
 * returns false when more of the stream must be read to tell.
 */
static bool departure_first(struct notifyx *nx, size_t pos, const struct inrec *to,
			    bool drained, size_t *fpos, struct inrec *f)
{
	struct ino *in = ino_of(nx);
	size_t at = pos;

	*fpos = 0;
	for (pos += to->size; nx_inotify_decode(in->buf, in->len, pos, f); pos += f->size) {
		if (f->mask == 0 || (!f->name_len && (f->mask & IN_MOVE_SELF)))
			continue;
		if ((f->mask & IN_MOVED_FROM) && f->wd == to->wd && f->name_len == to->name_len &&
		    !memcmp(f->name, to->name, f->name_len) &&
		    (((f->mask ^ to->mask) & IN_ISDIR) || there_after(nx, pos + f->size, to, f)))
			*fpos = pos;
		return true;
	}
	/* The last record read: its departure may not be queued yet.  Wait
	 * for it as for the second half of a move. */
	return !held(nx, at, drained);
}

/* Processes the records in buf; returns the bytes that can leave it (the
 * records before the first one that waits; those handled after it are
 * consumed in place).  drained: the kernel had nothing more to give (or the
 * buffer is full). */
static size_t parse(struct notifyx *nx, bool drained)
{
	struct ino *in = ino_of(nx);
	struct inrec r;
	size_t pos = 0, keep = SIZE_MAX;

	in->holding = in->block_all = false;
	in->nblocked = in->nwait_cookie = in->nheld_kwd = 0;
	for (; nx_inotify_decode(in->buf, in->len, pos, &r); pos += r.size) {
		bool done = true;
		in->next = pos + r.size;
		in->cur = in->stream - in->len + pos;
		if (!r.mask) {
			continue; /* consumed */
		} else if (must_wait(nx, pos, &r)) {
			done = false;
		} else if (r.mask & IN_Q_OVERFLOW) {
			/* Every watch, even one repaired after it (stale()): the
			 * kernel queue may have stayed full, losing more, after
			 * the repair read its tree. */
			nx_lost_all(nx);
		} else if (r.mask & IN_MOVED_FROM) {
			done = moved_from(nx, pos, &r, drained);
		} else if (r.mask & IN_MOVED_TO) { /* no MOVED_FROM: from outside */
			size_t fpos;
			struct inrec f;
			/* fpos: an exchange with a place outside the watches */
			done = departure_first(nx, pos, &r, drained, &fpos, &f) &&
			       (!fpos || moved_from(nx, fpos, &f, drained));
			if (done) {
				if (fpos)
					consume(in, fpos);
				struct move m = {
					.to = nx_map_get(&in->kwatches, (uint64_t)r.wd),
					.tname = r.name, .tlen = r.name_len,
					.isdir = r.mask & IN_ISDIR,
				};
				do_move(nx, &m);
			}
		} else {
			plain_event(nx, &r);
		}
		if (!done) {
			wait_behind(nx, pos, &r);
			if (keep == SIZE_MAX)
				keep = pos;
		} else if (keep != SIZE_MAX) {
			consume(in, pos);
		}
		/* A directory deferred is watched (and listed) as soon as no
		 * later record read changes its name: its contents come before
		 * the later events of its watch, not after them. */
		if (done && in->ndeferred && (r.mask & DIR_CHANGES))
			retry_deferred(nx, false);
	}
	in->next = 0; /* the caller drops what was handled: what waits starts at 0 */
	return keep < pos ? keep : pos;
}

/* Roots that a repair found gone (see check_root). */
static void recheck_roots(struct notifyx *nx)
{
	struct nx_watch *w;
	size_t pos = 0;

	ino_of(nx)->recheck = false;
	while (nx_map_next(&nx->watches, &pos, NULL, (void **)&w))
		check_root(nx, w);
}

static int arm_hold_timer(struct ino *in)
{
	uint64_t now = nx_now_ns();
	uint64_t left = in->hold_until > now ? in->hold_until - now : 1;
	struct itimerspec its = { .it_value = { (time_t)(left / 1000000000u), (long)(left % 1000000000u) } };

	in->timer_armed = timerfd_settime(in->timerfd, 0, &its, NULL) == 0;
	return in->timer_armed ? 0 : -1;
}

static int ino_process(struct notifyx *nx, unsigned flags)
{
	struct ino *in = ino_of(nx);
	uint64_t expirations;
	int ret = 0, err = 0;
	bool dry = false, wake = false;
	int syncs = 0, retries = 0;

	in->flush = flags & NX_PROCESS_FLUSH;
	/* Reset the timer's readiness once it has fired. */
	if (in->timer_armed && read(in->timerfd, &expirations, sizeof(expirations)) > 0)
		in->timer_armed = false;
	for (;;) {
		ssize_t n = 0;
		bool drained;

		if (in->len < sizeof(in->buf)) {
			n = read(in->fd, in->buf + in->len, sizeof(in->buf) - in->len);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && errno != EAGAIN && errno != EINVAL) {
				ret = -1;
				err = errno;
				break;
			}
		}
		/* EINVAL: the next record does not fit in what is left of the buffer. */
		drained = n <= 0;
		if (n > 0) {
			in->len += (size_t)n;
			in->stream += (uint64_t)n;
			note_read(in);
		}
		drop_front(in, parse(nx, drained || in->len == sizeof(in->buf)));
		/* A few rounds: a move made meanwhile may be held in its turn. */
		if (drained && in->holding && !in->fed && syncs++ < 4 && sync_holds(nx))
			continue; /* read what the sync let in, then parse again */
		/* Everything read is handled: the directories deferred are
		 * watched now, unless what they read meanwhile (read_more())
		 * changes their names again; that is handled first. */
		if (drained && !in->len && !in->holding && in->ndeferred && !(wake = retries++ == 4)) {
			retry_deferred(nx, true);
			if (in->len)
				continue;
		}
		if (drained) {
			dry = !in->len;
			break;
		}
		/* Events are ready: the application reads them before more of
		 * the kernel queue is read (what is held waits in buf). */
		if (nx->queue.count && (!in->len || in->holding))
			break;
	}
	if (in->holding && arm_hold_timer(in) < 0) {
		/* Nothing would end the holds: end them now. */
		in->no_wait = true;
		drop_front(in, parse(nx, true));
		in->no_wait = false;
	} else if (!in->holding && wake && dry) {
		/* Directories are still deferred, as changes to their names
		 * went on: the application comes back for them at once. */
		in->hold_until = nx_now_ns();
		arm_hold_timer(in);
	} else if (!in->holding && in->timer_armed) {
		/* The holds ended sooner: no spurious wakeup later. */
		struct itimerspec off = { { 0, 0 }, { 0, 0 } };
		in->timer_armed = timerfd_settime(in->timerfd, 0, &off, NULL) < 0;
	}
	if (dry && !in->holding)
		dry_point(nx);
	if (dry)
		check_mounts(nx);
	if (dry && in->recheck)
		recheck_roots(nx);
	in->flush = false;
	errno = err;
	return ret;
}

int nx_inotify_feed(struct notifyx *nx, const void *data, size_t len, bool drained)
{
	struct ino *in = ino_of(nx);

	if (!len)
		data = "";
	if (len > sizeof(in->buf) - in->len) {
		errno = ENOBUFS;
		return -1;
	}
	memcpy(in->buf + in->len, data, len);
	in->len += len;
	in->stream += len;
	in->fed = true;
	note_read(in);
	drop_front(in, parse(nx, drained || in->len == sizeof(in->buf)));
	if (drained && !in->holding && !in->len) {
		if (in->ndeferred)
			retry_deferred(nx, true);
		dry_point(nx);
	}
	return 0;
}

int nx_inotify_kwd(const struct notifyx *nx, int i)
{
	struct kwatch *kw;
	size_t pos = 0;

	while (nx_map_next(&ino_of(nx)->kwatches, &pos, NULL, (void **)&kw))
		if (kw->subs && i-- == 0)
			return kw->kwd;
	return -1;
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
	while (nx_map_next(&in->kwatches, &pos, NULL, (void **)&kw)) {
		for (struct nx_node *n = kw->subs; n; n = n->knext)
			n->kref = NULL;
		free(kw);
	}
	nx_map_free(&in->kwatches);
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
	unguard(in, w);
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
	if (walk(nx, w->root, -1, "", in->path[2], 0, w->flags & NOTIFYX_WATCH_LIST, true) < 0 ||
	    w->ended)
		return -1;
	return (w->flags & NOTIFYX_WATCH_RECURSIVE) ? guard(nx, w, true) : 0;
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
		hold_mount_parent(in, iw);
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
		if (attach(in, w->root, w->abspath, extra) < 0)
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
	bury(nx, w->root);
	w->root = NULL;
	free_iwatch(in, w);
	errno = err;
	return -1;
}

static void ino_rm_watch(struct notifyx *nx, struct nx_watch *w)
{
	bury(nx, w->root);
	w->root = NULL;
	free_iwatch(ino_of(nx), w);
}

/* The kernel watches a repair may use again. */
struct kept {
	struct kwatch **v;
	size_t n, cap;
};

static void keep(struct kept *k, struct kwatch *kw)
{
	if (!kw || kw->kept)
		return;
	if (k->n == k->cap) {
		size_t cap = k->cap ? k->cap * 2 : 64;
		struct kwatch **v = realloc(k->v, cap * sizeof(*v));
		if (!v)
			return; /* released and added again: a new wd, no harm */
		k->v = v;
		k->cap = cap;
	}
	kw->kept = true;
	k->v[k->n++] = kw;
}

static void keep_node(void *ctx, struct nx_node *n)
{
	keep(ctx, n->kref);
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
	ioctl(in->fd, FIONREAD, &queued);
	iw->since = in->stream + (uint64_t)queued;
	nx_node_foreach(w->root, keep_node, &k);
	keep(&k, iw->guard);
	bury(nx, w->root);
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
		k.v[i]->kept = false;
		kwatch_release(in, k.v[i]);
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
	.process = ino_process,
	.repair = ino_repair,
};
