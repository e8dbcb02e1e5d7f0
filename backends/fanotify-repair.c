/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The fanotify backend (fanotify.c): setting a watch up (the mark policy:
 * inode or filesystem marks), and the repair of NOTIFYX_WATCH_RESCAN. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fanotify-int.h"
#include "ktree.h"
#include "scan.h"

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
long nx_fan_default_inode_max(void)
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
	if (fw->lazy) {
		fan_of(nx)->nlazy--;
		nx_map_free(&fan_of(nx)->lazy_outside); /* (counts of it) */
	}
	nx_fan_fs_unmark(nx, fw);
	if (fw->hfd >= 0)
		close(fw->hfd);
	free(fw->hname);
	free(fw->marks);
	free(fw->mnts);
	free(fw->root);
	free(fw);
}

void nx_fan_free_fwatch(struct notifyx *nx, struct nx_watch *w)
{
	drop_fwatch(nx, w->bdata);
	w->bdata = NULL;
}

/* How setup() chooses the marks of a recursive watch: by counting the
 * tree's directories against inode_max, or as the watch had them. */
enum marks { COUNT, KEEP_INODE, KEEP_FS };

/* Sets up w (w->bdata NULL, w->root new) from its root, open (O_PATH) at fd:
 * what add_watch does after opening the root, and a repair again.  On
 * failure nothing of it stays. */
static int setup(struct notifyx *nx, struct nx_watch *w, int fd, enum marks how)
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
	if (deep && nx_fan_hold_root(nx, w, fd) < 0)
		goto fail;
	if (deep && fa->fsmode >= 0 && (how == KEEP_FS || fa->inode_max == 0 ||
		     (how == COUNT && tree_larger(fd, fa->inode_max)))) {
		if (nx_fan_fs_add_watch(nx, w, fd) == 0) {
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
		if (nx_fan_walk(nx, w->root, fd, ".", fa->path[2], 0, w->flags & NOTIFYX_WATCH_LIST,
			 true) == 0 && !w->ended) {
			fa->epoch++; /* listed before what is to be read happens */
			nx_fan_guard_root(nx, w);
			return 0;
		}
		goto fail;
	}
	if (nx_fan_attach(nx, w->root, fd, NX_FAN_MARK) == 0)
		return 0;
fail:
	err = errno;
	nx_fan_bury(nx, w->root);
	w->root = NULL;
	nx_fan_free_fwatch(nx, w);
	errno = err;
	return -1;
}

int nx_fan_add_watch(struct notifyx *nx, struct nx_watch *w)
{
	int fd = open(w->abspath, O_PATH | O_CLOEXEC |
		      ((w->flags & NOTIFYX_WATCH_NOFOLLOW) ? O_NOFOLLOW : 0));
	int ret, err;

	if (fd < 0)
		return -1;
	ret = setup(nx, w, fd, COUNT);
	err = errno;
	close(fd);
	errno = err;
	return ret;
}

void nx_fan_rm_watch(struct notifyx *nx, struct nx_watch *w)
{
	nx_fan_bury(nx, w->root);
	w->root = NULL;
	nx_fan_free_fwatch(nx, w);
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
	struct kobj *k = nx_fan_unsubscribe(n);

	n->dead = true;
	if (!k)
		return;
	if (o->n == o->cap) {
		size_t cap = o->cap ? 2 * o->cap : 64;
		uint64_t *v = realloc(o->keys, cap * sizeof(*v));
		if (!v) {
			/* its mark stays (as in nx_fan_detach); a walk marks again */
			nx_fan_drop_kobj(o->fa, k);
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
 * stays until the inode goes, as in nx_fan_detach). */
static void drop_orphans(struct notifyx *nx, struct orphans *o, int rootfd)
{
	struct fan *fa = fan_of(nx);
	int mfd = -2; /* not opened yet */

	for (size_t i = 0; i < o->n; i++) {
		struct kobj *k = nx_map_get(&fa->kobjs, o->keys[i]);
		int fd;
		if (!k || k->subs)
			continue;
		/* a real open: see nx_fan_open_id; its events are listed ones */
		if (k->kmask && mfd == -2)
			mfd = openat(rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK);
		if (k->kmask && mfd >= 0 && (fd = nx_fan_open_id(mfd, k->id, k->idlen)) >= 0) {
			nx_fan_unmark(nx, k, fd);
			close(fd);
		} else if (k->kmask && mfd >= 0 && errno == EPERM) {
			close(mfd);
			mfd = -1; /* no privilege: no use trying the others */
		}
		nx_fan_drop_kobj(fa, k);
	}
	if (mfd >= 0)
		close(mfd);
	free(o->keys);
}

/* Sets w up again, listing the tree (w->flags has LIST: the listing fills
 * the core's new model): 1; 0 for a watched file, which loses nothing. */
int nx_fan_repair(struct notifyx *nx, struct nx_watch *w)
{
	struct fwatch *old = w->bdata;
	struct nx_node *root = w->root;
	struct fan *fa = fan_of(nx);
	struct orphans o = { .fa = fa };
	struct stat st;
	uint64_t since;
	enum marks how;
	int fd, ret = -1, err;

	if (!old || !root || !root->kref || !((struct kobj *)root->kref)->isdir)
		return 0;
	/* Through what is held: wherever the root is now (nx_fan_open_node checks it is
	 * still the same directory; a watch that holds nothing, not recursive,
	 * goes by its path). */
	if ((fd = nx_fan_open_node(nx, root)) < 0)
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
	nx_fan_to_graveyard(nx, root);
	w->bdata = NULL;
	/* The marks the watch had, without counting the tree again (a second
	 * listing of it in every repair), unless inode marks had come near
	 * inode_max: o.n is the old tree's directories. */
	how = old->fsmode ? KEEP_FS : o.n > (size_t)fa->inode_max / 2 ? COUNT : KEEP_INODE;
	/* The records queued so far are not w's any more (nx_fan_stale): the
	 * tree is read after them.  So an entry whose inode has not changed
	 * since before them (read on the clock first, with a slack for coarse
	 * timestamps) has no FAN_CREATE to come, and its walk needs not count
	 * it (struct nx_kt_walk's made_from). */
	fa->repair_from = nx_kt_repair_from();
	since = nx_fan_seq_next(fa);
	if ((w->root = nx_node_new_root(w)))
		ret = setup(nx, w, fd, how);
	else
		errno = ENOMEM;
	err = errno;
	fa->repair_from = 0;
	if (ret == 0)
		((struct fwatch *)w->bdata)->since = since;
	/* The old state goes only now: filesystem marks the new one shares
	 * stay marked throughout. */
	drop_fwatch(nx, old);
	drop_orphans(nx, &o, fd);
	close(fd);
	errno = err;
	return ret < 0 ? -1 : 1;
}
