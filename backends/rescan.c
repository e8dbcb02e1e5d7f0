/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * NOTIFYX_WATCH_RESCAN, on every backend: a model of what the application
 * has been told, and the repair that follows an OVERFLOW.
 *
 * The model is a snapshot (backends/snapshot.c) of the watch's tree as the
 * events queued so far describe it: built from the backend's own listing
 * when the watch is added (NOTIFYX_WATCH_LIST, for the model alone when the
 * application did not ask for it), then changed by every event queued for
 * the watch (an entry that comes or changes is stat'ed then, so the model
 * holds what the application could see when it handled the event).
 *
 * After a loss, the backend sets its kernel side up again and lists the
 * tree into a new model (ops->repair), which takes the old one's unchanged
 * files over (nx_snap_take: most of them, nothing to compare or to free
 * for those), and the diff between the two models is reported as
 * SYNTHETIC events, exactly as a scanning backend reports a scan, then one
 * SYNC.  The new model comes from the backend's listing, not
 * from a read of its own, because only the backend knows how its listing
 * and the kernel's events fit together while the tree changes (a read of
 * its own could miss a directory moved during it that the kernel's events
 * then take as known).  The repair's events are not counted against
 * queue_max: they are bounded by the differences, and losing them would
 * only start the repair over.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nx.h"
#include "snapshot.h"

struct nx_rescan {
	int rootfd;               /* O_PATH: follows the root wherever it moves */
	struct nx_snode *model;   /* what the application has been told */
	uint32_t cookie;          /* for the diff's MOVED_OUT/MOVED_IN pairs */
	/* While a listing is queued, the directory whose entries come in a
	 * row, held open: each entry is stat'ed with one lookup, not one per
	 * component of its path. */
	int dirfd;
	size_t dir_len;
	char dir[PATH_MAX];
	/* While a kernel backend's walk lists a directory (nx_rescan_listing):
	 * its descriptor (the walk's, borrowed), the length of its path, and
	 * its node in the model once found.  The listing's entries are
	 * stat'ed through the descriptor the walk reads, with no lookup of a
	 * path, and added under that node without one either. */
	int list_fd;
	size_t list_len;
	struct nx_snode *list_dir;
	int64_t list_ctime; /* of the entry the model took last, INT64_MAX: not stat'ed */
	/* During a repair: the new model takes the old one's unchanged files
	 * over (snapshot.h). */
	struct nx_stake take;
};

struct read_ctx {
	struct notifyx *nx;
	struct nx_watch *w;
	const char *below; /* the read's root relative to the watch's, or NULL */
};

static bool excluded(void *ctx, const char *path, const char *name)
{
	const struct read_ctx *c = ctx;
	char full[PATH_MAX];

	if (!c->w->nexclude)
		return false;
	if (c->below) {
		if ((size_t)snprintf(full, sizeof(full), "%s/%s", c->below, path) >= sizeof(full))
			return false;
		path = full;
	}
	return nx_excluded(c->nx, c->w, path, name);
}

/* Reads w's tree as a scanning backend would; NULL with errno. */
static struct nx_snode *read_tree(struct notifyx *nx, struct nx_watch *w, struct nx_sread *r,
				  struct nx_snode *prev)
{
	struct read_ctx c = { nx, w, NULL };

	memset(r, 0, sizeof(*r));
	r->recursive = w->flags & NOTIFYX_WATCH_RECURSIVE;
	r->xdev = w->flags & NOTIFYX_WATCH_XDEV;
	r->skip = excluded;
	r->ctx = &c;
	r->prev = prev;
	return nx_snap_read(w->rescan->rootfd, r);
}

/* An empty model: the root, with its attributes. */
static struct nx_snode *new_root(const struct nx_rescan *rs)
{
	struct nx_sattr a;
	struct nx_snode *n;

	if (nx_snap_stat(rs->rootfd, ".", &a) < 0 || !(n = nx_snap_add(NULL, "", 0, &a)))
		return NULL;
	n->entered = true;
	return n;
}

int nx_rescan_start(struct notifyx *nx, struct nx_watch *w)
{
	struct nx_rescan *rs = calloc(1, sizeof(*rs));
	int err;

	(void)nx;
	if (!rs)
		return -1;
	w->rescan = rs;
	rs->dirfd = -1;
	rs->list_fd = -1;
	rs->list_ctime = INT64_MAX;
	rs->rootfd = open(w->abspath, O_PATH | O_DIRECTORY | O_CLOEXEC |
				      (w->flags & NOTIFYX_WATCH_NOFOLLOW ? O_NOFOLLOW : 0));
	if (rs->rootfd < 0 || !(rs->model = new_root(rs))) {
		err = errno;
		nx_rescan_free(w);
		errno = err;
		return -1;
	}
	return 0;
}

void nx_rescan_free(struct nx_watch *w)
{
	struct nx_rescan *rs = w->rescan;

	if (!rs)
		return;
	if (rs->rootfd >= 0)
		close(rs->rootfd);
	if (rs->dirfd >= 0)
		close(rs->dirfd);
	nx_snap_free(rs->model);
	free(rs);
	w->rescan = NULL;
}

void nx_rescan_listing(struct nx_watch *w, int fd, size_t rel_len)
{
	struct nx_rescan *rs = w->rescan;

	if (!rs)
		return;
	rs->list_fd = fd;
	rs->list_len = rel_len;
	rs->list_dir = NULL;
}

bool nx_rescan_listed_before(const struct nx_watch *w, int64_t t)
{
	return w->rescan && w->rescan->list_ctime < t;
}

/* ---- the model follows the events ---- */

/* The node at path, or NULL; *dir is the directory that holds (or would
 * hold) its last component, NULL when that directory is not in the model. */
static struct nx_snode *lookup(struct nx_snode *root, const char *path, size_t len,
			       struct nx_snode **dir, const char **name, size_t *nlen)
{
	struct nx_snode *n = root;
	const char *p = path, *end = path + len;

	*dir = NULL;
	*name = "";
	*nlen = 0;
	if (!len)
		return root;
	for (;;) {
		const char *slash = memchr(p, '/', (size_t)(end - p));
		size_t l = (size_t)((slash ? slash : end) - p);
		if (!slash) {
			*dir = nx_snode_isdir(n) ? n : NULL;
			*name = p;
			*nlen = l;
			return *dir ? nx_snap_find(n, p, l) : NULL;
		}
		if (!(n = nx_snap_find(n, p, l)) || !nx_snode_isdir(n))
			return NULL;
		p = slash + 1;
	}
}

/* What the model says of an entry that could not be stat'ed (gone, or
 * replaced by another type already): its type as the event told it, and no
 * identity, so that the next diff can only compare it by name. */
static void unknown(struct nx_sattr *a, const struct nx_snode *dir, bool isdir)
{
	memset(a, 0, sizeof(*a));
	a->mode = isdir ? S_IFDIR : S_IFREG;
	a->dev = dir->a.dev;
}

static struct nx_snode *add(struct notifyx *nx, struct nx_watch *w, const char *path, size_t len,
			    bool isdir, bool moved_in);

/* Where the last component of a path of len bytes begins: 0 at the root,
 * else past its last slash (the directory's path is the first nameoff - 1
 * bytes).  Found once for each entry the model takes. */
static size_t name_offset(const char *path, size_t len)
{
	const char *slash = memrchr(path, '/', len);

	return slash ? (size_t)(slash - path) + 1 : 0;
}

/* Stats the entry at rel (NUL-terminated, in a buffer of PATH_MAX), whose
 * name begins at nameoff. */
static int stat_entry(struct nx_watch *w, char *rel, size_t nameoff, struct nx_sattr *a)
{
	struct nx_rescan *rs = w->rescan;
	size_t dlen = nameoff ? nameoff - 1 : 0;

	if (rs->list_fd >= 0 && dlen == rs->list_len) /* an entry the walk lists */
		return nx_snap_stat(rs->list_fd, rel + nameoff, a);
	if (!w->staging || !nameoff) { /* not a listing: events are few */
		if (rs->dirfd >= 0)
			close(rs->dirfd);
		rs->dirfd = -1;
		return nx_snap_stat(rs->rootfd, rel, a);
	}
	if (rs->dirfd < 0 || rs->dir_len != dlen || memcmp(rs->dir, rel, dlen)) {
		if (rs->dirfd >= 0)
			close(rs->dirfd);
		rel[dlen] = '\0';
		rs->dirfd = openat(rs->rootfd, rel, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		rel[dlen] = '/';
		if (rs->dirfd < 0)
			return nx_snap_stat(rs->rootfd, rel, a);
		memcpy(rs->dir, rel, dlen);
		rs->dir_len = dlen;
	}
	return nx_snap_stat(rs->dirfd, rel + dlen + 1, a);
}

/* The directory that holds path's last component (which begins at nameoff),
 * made (as the events of a tree made it) when missing; NULL when it cannot
 * be. */
static struct nx_snode *parent_of(struct notifyx *nx, struct nx_watch *w, const char *path,
				  size_t nameoff)
{
	struct nx_rescan *rs = w->rescan;
	size_t dlen = nameoff ? nameoff - 1 : 0;
	bool listed = rs->list_fd >= 0 && dlen == rs->list_len;
	struct nx_snode *dir, *n;
	const char *name;
	size_t nlen;

	if (!nameoff)
		return rs->model;
	if (listed && rs->list_dir)
		return rs->list_dir;
	n = lookup(rs->model, path, dlen, &dir, &name, &nlen);
	if (!n || !nx_snode_isdir(n))
		n = add(nx, w, path, dlen, true, false);
	if (listed)
		rs->list_dir = n;
	return n;
}

/* The entry at path exists now, with the type the event gave it. */
static struct nx_snode *add(struct notifyx *nx, struct nx_watch *w, const char *path, size_t len,
			    bool isdir, bool moved_in)
{
	struct nx_rescan *rs = w->rescan;
	bool recursive = w->flags & NOTIFYX_WATCH_RECURSIVE;
	size_t nameoff = name_offset(path, len);
	struct nx_snode *dir = parent_of(nx, w, path, nameoff), *n;
	const char *name = path + nameoff;
	size_t nlen = len - nameoff;
	struct nx_sattr a;
	char rel[PATH_MAX];

	rs->list_ctime = INT64_MAX; /* (parent_of may have set it for the directory) */
	if (!dir || len >= sizeof(rel))
		return NULL;
	memcpy(rel, path, len);
	rel[len] = '\0';
	if (stat_entry(w, rel, nameoff, &a) < 0 || (S_ISDIR(a.mode) != isdir))
		unknown(&a, dir, isdir);
	else
		rs->list_ctime = a.ctime;
	/* New, mostly (a listing into a new model): one search of dir. */
	if (!(n = nx_snap_take(&rs->take, dir, name, nlen, &a)) &&
	    !(n = nx_snap_add(dir, name, nlen, &a))) {
		if (errno != EEXIST)
			return NULL;
		nx_snap_give_back(&rs->take); /* (n is to change: the new model's own) */
		if (!(n = nx_snap_find(dir, name, nlen)))
			return NULL;
		if (nx_snode_isdir(n) == isdir) {
			n->a = a; /* the same type: what the copy holds below it stays */
			return n;
		}
		rs->list_dir = NULL;
		nx_snap_remove(n);
		if (!(n = nx_snap_add(dir, name, nlen, &a)))
			return NULL;
	}
	/* A directory that moved in without LIST brought entries the
	 * application was not told of, as a scan would see them: read them. */
	if (isdir && recursive && moved_in && !(w->flags & NOTIFYX_WATCH_LIST) &&
	    a.ino) {
		struct read_ctx c = { nx, w, rel };
		struct nx_sread r = { .recursive = true,
				      .xdev = w->flags & NOTIFYX_WATCH_XDEV,
				      .skip = excluded, .ctx = &c };
		int fd = openat(rs->rootfd, rel, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		struct nx_snode *t = fd >= 0 ? nx_snap_read(fd, &r) : NULL;
		if (fd >= 0)
			close(fd);
		if (t) { /* its entries become n's */
			n->kids = t->kids;
			n->nkids = t->nkids;
			n->cap = t->cap;
			for (uint32_t i = 0; i < n->nkids; i++)
				n->kids[i]->parent = n;
			t->kids = NULL;
			t->nkids = t->cap = 0;
			nx_snap_free(t);
		}
	}
	n->entered = isdir && recursive;
	return n;
}

static void remove_path(struct nx_rescan *rs, const char *path, size_t len)
{
	struct nx_snode *dir, *n;
	const char *name;
	size_t nlen;

	rs->list_dir = NULL;
	if (len && (n = lookup(rs->model, path, len, &dir, &name, &nlen)))
		nx_snap_remove(n);
}

static bool within(const struct nx_snode *n, const struct nx_snode *a)
{
	for (; n; n = n->parent)
		if (n == a)
			return true;
	return false;
}

static void rename_path(struct notifyx *nx, struct nx_watch *w, uint32_t flags, const char *to,
			size_t to_len, const char *from, size_t from_len)
{
	struct nx_rescan *rs = w->rescan;
	bool isdir = flags & NOTIFYX_EVENT_ISDIR;
	struct nx_snode *a, *b, *dir, *tdir;
	const char *name, *tname;
	size_t nlen, tlen;

	rs->list_dir = NULL;
	a = lookup(rs->model, from, from_len, &dir, &name, &nlen);
	b = lookup(rs->model, to, to_len, &tdir, &tname, &tlen);
	if (!a || !tdir || within(tdir, a) || (b && b != a && within(a, b))) {
		/* The model cannot follow (the source was never told of, or
		 * the rename would put an entry in itself or replace what
		 * holds its source): the entries are what they are now.  The
		 * one an exchange brings to old_path was at path: of the type
		 * the model had there (ISDIR tells of the other end). */
		bool was_dir = b ? nx_snode_isdir(b) : isdir;
		remove_path(rs, from, from_len);
		add(nx, w, to, to_len, isdir, true);
		if (flags & NOTIFYX_EVENT_EXCHANGE)
			add(nx, w, from, from_len, was_dir, true);
		return;
	}
	if (b == a)
		return;
	if (b && (flags & NOTIFYX_EVENT_EXCHANGE) && !within(dir, b)) {
		/* b takes a's place: under a temporary name first, which no
		 * directory entry can have. */
		if (nx_snap_move(b, dir, "/", 1) < 0)
			return;
	} else if (b) {
		nx_snap_remove(b);
		b = NULL;
	}
	if (nx_snap_move(a, tdir, tname, tlen) == 0 && b)
		nx_snap_move(b, dir, name, nlen);
}

bool nx_rescan_has(const struct nx_watch *w, const char *path, size_t path_len)
{
	struct nx_snode *dir;
	const char *name;
	size_t nlen;

	return w->rescan && path_len && lookup(w->rescan->model, path, path_len, &dir, &name, &nlen);
}

/* Is a a proper ancestor of b (paths below the root)? */
static bool below(const char *a, size_t alen, const char *b, size_t blen)
{
	return alen < blen && b[alen] == '/' && !memcmp(a, b, alen);
}

/*
 * The model of a watch that mirrors (LIST, and every event that changes
 * the tree's shape) is what the application's copy holds.  An event that
 * such a copy cannot apply (an entry made in a directory the copy lacks or
 * has as a file, an exchange with an end the copy lacks, a rename of an
 * entry into itself) says that the library lost track of the tree: a
 * listing saw changes that events read after it report again (notifyx(7),
 * BUGS).  Delivered, it would make the copy and the model differ, and no
 * repair could mend what the model does not know is wrong; counted as a
 * loss instead, it is mended by the repair that follows.  The other
 * watches keep the model lenient: it follows whatever comes.
 */
#define MIRROR_EVENTS \
	(NOTIFYX_CREATE | NOTIFYX_DELETE | NOTIFYX_RENAME | NOTIFYX_MOVED_OUT | NOTIFYX_MOVED_IN)

bool nx_rescan_applies(const struct nx_watch *w, uint32_t mask, uint32_t flags, const char *path,
		       size_t path_len, const char *old, size_t old_len)
{
	struct nx_snode *dir, *a, *b;
	const char *name;
	size_t nlen;

	if (!(w->flags & NOTIFYX_WATCH_LIST) || (w->events & MIRROR_EVENTS) != MIRROR_EVENTS)
		return true;
	switch (mask) {
	case NOTIFYX_CREATE:
	case NOTIFYX_MOVED_IN:
		lookup(w->rescan->model, path, path_len, &dir, &name, &nlen);
		return dir != NULL;
	case NOTIFYX_RENAME:
		if (below(path, path_len, old, old_len) || below(old, old_len, path, path_len))
			return false;
		b = lookup(w->rescan->model, path, path_len, &dir, &name, &nlen);
		if (!(flags & NOTIFYX_EVENT_EXCHANGE))
			return dir != NULL;
		a = lookup(w->rescan->model, old, old_len, &dir, &name, &nlen);
		return a && b;
	default:
		return true;
	}
}

void nx_rescan_apply(struct notifyx *nx, struct nx_watch *w, uint32_t mask, uint32_t flags,
		     const char *path, size_t path_len, const char *old, size_t old_len)
{
	struct nx_rescan *rs = w->rescan;
	bool isdir = flags & NOTIFYX_EVENT_ISDIR;
	struct nx_snode *dir, *n;
	struct nx_sattr a;
	const char *name;
	size_t nlen;

	/* A node the new model of a repair took over must not change. */
	if (mask & (NOTIFYX_DELETE | NOTIFYX_MOVED_OUT | NOTIFYX_RENAME | NOTIFYX_MODIFY |
		    NOTIFYX_ATTRIB | NOTIFYX_CLOSE_WRITE))
		nx_snap_give_back(&rs->take);
	switch (mask) {
	case NOTIFYX_CREATE:
		add(nx, w, path, path_len, isdir, false);
		break;
	case NOTIFYX_MOVED_IN:
		add(nx, w, path, path_len, isdir, true);
		break;
	case NOTIFYX_DELETE:
	case NOTIFYX_MOVED_OUT:
		remove_path(rs, path, path_len);
		break;
	case NOTIFYX_RENAME:
		rename_path(nx, w, flags, path, path_len, old, old_len);
		break;
	case NOTIFYX_MODIFY:
	case NOTIFYX_ATTRIB:
	case NOTIFYX_CLOSE_WRITE:
		n = lookup(rs->model, path, path_len, &dir, &name, &nlen);
		if (!n)
			add(nx, w, path, path_len, isdir, false);
		/* Another type by now: the event that says so is coming. */
		else if (nx_snap_stat(rs->rootfd, path_len ? path : ".", &a) == 0 &&
			 (a.mode & S_IFMT) == (n->a.mode & S_IFMT))
			n->a = a;
		break;
	default: /* nothing the model holds */
		break;
	}
}

/* ---- the repair ---- */

/* Copies the entries of src into dir, of the new model. */
static int adopt_kids(struct nx_rescan *rs, struct nx_snode *dir, const struct nx_snode *src)
{
	for (uint32_t i = 0; i < src->nkids; i++) {
		const struct nx_snode *k = src->kids[i];
		struct nx_snode *n = nx_snap_take(&rs->take, dir, k->name, k->name_len, &k->a);
		if (!n && !(n = nx_snap_add(dir, k->name, k->name_len, &k->a)))
			return -1;
		n->entered = k->entered;
		if (k->nkids && adopt_kids(rs, n, k) < 0)
			return -1;
	}
	return 0;
}

int nx_rescan_adopt(struct nx_watch *w, const struct nx_snode *t)
{
	struct nx_rescan *rs = w->rescan;
	struct nx_snode *root = nx_snap_empty(t);

	if (!root)
		return -1;
	root->entered = t->entered;
	if (adopt_kids(rs, root, t) < 0) {
		nx_snap_give_back(&rs->take);
		nx_snap_free(root);
		errno = ENOMEM;
		return -1;
	}
	nx_snap_free(rs->model);
	rs->model = root;
	return 1;
}

static void emit_diff(void *ctx, size_t watch, uint32_t mask, uint32_t flags, uint32_t cookie,
		      const char *path, size_t path_len, const char *old, size_t old_len)
{
	struct read_ctx *c = ctx;

	(void)watch;
	/* A filesystem mounted or unmounted below the root: what it hides
	 * or shows is not listed, and saying OVERFLOW again would only
	 * start another repair. */
	if (mask == NOTIFYX_OVERFLOW)
		return;
	nx_emit(c->nx, c->w, mask, flags | NOTIFYX_EVENT_SYNTHETIC, cookie, 0, path, path_len,
		old, old_len);
}

static void repair(struct notifyx *nx, struct nx_watch *w)
{
	struct nx_rescan *rs = w->rescan;
	struct nx_sdiff_watch dw = { .old = rs->model };
	struct read_ctx c = { nx, w, NULL };
	struct nx_sread r;
	uint32_t flags = w->flags;
	int listed = 0;
	bool lost;

	w->repair_due = false;
	if (rs->dirfd >= 0) { /* the directory may have moved since the last listing */
		close(rs->dirfd);
		rs->dirfd = -1;
	}
	if (!(rs->model = new_root(rs))) {
		rs->model = dw.old;
		/* A root that is gone has its DELETE_SELF or UNMOUNT coming;
		 * out of memory, the next read tries again. */
		if (errno == ENOMEM)
			nx_lost(nx, w);
		return;
	}
	w->staging = true; /* what it queues is exempt from queue_max */
	if (nx->ops->repair) {
		/* The backend sets its kernel side up again and lists the tree
		 * into the new model; of its events, only ERRORs and the end of
		 * the root reach the application. */
		w->rebuild = true;
		w->flags |= NOTIFYX_WATCH_LIST;
		rs->take.old = dw.old;
		listed = nx->ops->repair(nx, w);
		if (listed <= 0)
			nx_snap_give_back(&rs->take);
		w->flags = flags;
		w->rebuild = false;
	}
	lost = rs->take.lost;
	nx_snap_take_end(&rs->take); /* before dw.old is freed or compared */
	if (w->ended) { /* its root went: no repair; the new model went with it */
		nx_snap_free(dw.old);
	} else if (listed < 0) {
		nx_emit(nx, w, NOTIFYX_ERROR, 0, 0, errno, "", 0, NULL, 0);
		nx_snap_free(dw.old);
		nx_end_watch(nx, w);
	} else {
		if (!listed) { /* the backend lost nothing: the tree is read here */
			nx_snap_free(rs->model);
			rs->model = read_tree(nx, w, &r, dw.old);
			if (!rs->model) {
				rs->model = dw.old;
				if (errno != ENOENT && errno != ESTALE)
					nx_emit(nx, w, NOTIFYX_ERROR,
						nx_sread_failed_isdir(&r, dw.old) ? NOTIFYX_EVENT_ISDIR : 0,
						0, errno, r.failed_path, strlen(r.failed_path), NULL, 0);
				goto out;
			}
			if (r.partial_err)
				nx_emit(nx, w, NOTIFYX_ERROR, NOTIFYX_EVENT_ISDIR, 0, r.partial_err,
					r.partial_path, strlen(r.partial_path), NULL, 0);
		}
		dw.cur = rs->model;
		dw.flags = (flags & NOTIFYX_WATCH_RECURSIVE ? NX_SDIFF_RECURSIVE : 0) |
			   (flags & NOTIFYX_WATCH_LIST ? NX_SDIFF_LIST : 0);
		w->repairing = true; /* the diff reports what the new model already is */
		if (nx_snap_diff(&dw, 1, &rs->cookie, emit_diff, &c) < 0)
			nx_lost(nx, w); /* out of memory: the next read tries again */
		w->repairing = false;
		nx_snap_free(dw.old);
		nx_emit(nx, w, NOTIFYX_SYNC, 0, 0, 0, "", 0, NULL, 0);
		if (lost) /* a file the new model lacks: the next read repairs again */
			nx_lost(nx, w);
	}
out:
	w->staging = false;
	nx_queue_splice(&nx->queue, &nx->stage, true);
}

void nx_rescan_run(struct notifyx *nx)
{
	struct nx_watch *w;
	size_t pos = 0;

	if (!nx->repairs_due)
		return;
	/* Move halves the backend holds are settled first: the repair
	 * rebuilds what they point into. */
	nx->ops->process(nx, NX_PROCESS_FLUSH);
	nx->repairs_due = false;
	while (nx_map_next(&nx->watches, &pos, NULL, (void **)&w))
		if (w->repair_due && !w->ended)
			repair(nx, w);
}
