/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The fanotify backend (fanotify.c): dispatching the kernel's events, the
 * held roots, and reading (process()). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fanotify-int.h"
#include "ktree.h"

/* ---- dispatching kernel events ---- */

static bool stale(const void *fa, const struct nx_node *s)
{
	return nx_fan_stale(fa, s);
}

size_t nx_fan_subscribers(struct notifyx *nx, const struct kobj *k, int i)
{
	struct fan *fa = fan_of(nx);

	return nx_kt_subscribers(nx, k ? k->subs : 0, stale, fa, &fa->vec[i], &fa->vec_cap[i]);
}

/* ---- held roots ---- */

/* Holds directory root w, open at fd (see struct fwatch): 0, or -1 when no
 * descriptor is left. */
int nx_fan_hold_root(struct notifyx *nx, struct nx_watch *w, int fd)
{
	struct fwatch *fw = w->bdata;
	int pfd = openat(fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
	char kpath[32], *path = fan_of(nx)->path[3], *slash;
	ssize_t len;

	snprintf(kpath, sizeof(kpath), "/proc/self/fd/%d", fd);
	if (pfd >= 0 && nx_fan_mnt_of(pfd) != nx_fan_mnt_of(fd) &&
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
void nx_fan_guard_root(struct notifyx *nx, struct nx_watch *w)
{
	struct fwatch *fw = w->bdata;
	int pfd;

	if (!fw || fw->hfd < 0 || fw->hname || fw->fsmode)
		return;
	pfd = openat(fw->hfd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (pfd >= 0 &&
	    nx_fan_mark_fd(fan_of(nx), FAN_MARK_ADD, FAN_DELETE | FAN_ONDIR, pfd) == 0) {
		unsigned char id[ID_MAX];
		size_t len;
		/* Kept when the parent's own mark goes (nx_fan_detach). */
		fw->guard = nx_fan_fd_id(pfd, id, &len, NULL) == 0 ? nx_fan_key(id, len) : 0;
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
	size_t count = nx_fan_subscribers(nx, k, 1);
	struct stat st;

	for (size_t i = 0; i < count; i++) {
		struct nx_node *n = fan_of(nx)->vec[1][i];
		struct fwatch *fw = nx_node_watch(n)->bdata;
		if (n->dead || n->parent || nx_node_watch(n)->ended || !fw || fw->hfd < 0 || fw->hname ||
		    fstat(fw->hfd, &st) < 0 || st.st_nlink)
			continue;
		nx_emit(nx, nx_node_watch(n), NOTIFYX_DELETE_SELF, NOTIFYX_EVENT_ISDIR, 0, 0, "", 0, NULL, 0);
		nx_end_watch(nx, nx_node_watch(n));
	}
}

/* Does name exist in n's directory now? */
static bool exists_now(struct notifyx *nx, struct nx_node *n, const char *name, size_t len)
{
	int fd = nx_fan_open_node(nx, n);
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

/* Directory n/name was created (the record's object, fa->cur_fid): it is
 * listed by its name, with its entries reported.  Where the listing found
 * another directory there, the one created moved on before the record was
 * read (its move is still to be read): its entries are reported where it
 * arrives (unlisted). */
static void created_dir(struct notifyx *nx, struct nx_node *n, const char *name, size_t nlen)
{
	struct fan *fa = fan_of(nx);
	const struct fanid *id = fa->cur_fid;
	struct nx_node *c;
	const struct kobj *k;

	nx_fan_add_subdir(nx, n, name, nlen, true, true);
	if (id && id->len && (c = nx_node_find(&nx->paths, n, name, nlen)) && !c->dead &&
	    (k = c->kref) && k != nx_fan_kobj_find(fa, id) &&
	    nx_map_put(&fa->unlisted, id->key, (void *)1) < 0)
		nx_lost(nx, nx_node_watch(n));
}

/* An event on entry name of node n's directory. */
static void child_event(struct notifyx *nx, struct nx_node *n, uint64_t mask, const char *name,
			size_t nlen)
{
	struct fan *fa = fan_of(nx);
	struct nx_watch *w = nx_node_watch(n);
	bool isdir = mask & FAN_ONDIR;
	uint32_t flags = isdir ? NOTIFYX_EVENT_ISDIR : 0, types[8];
	size_t len = nx_fan_entry_path(fa, n, name, nlen, 0), count;
	bool both = (mask & FAN_CREATE) && (mask & FAN_DELETE);

	if (len == SIZE_MAX) {
		if (mask & FAN_CREATE)
			nx_fan_too_long(nx, n);
		return;
	}
	if ((mask & FAN_CREATE) && nx_fan_sup_take(fa, n, name, nlen))
		mask &= ~(uint64_t)FAN_CREATE; /* a listing reported it already */
	if ((mask & FAN_CREATE) && isdir && nx_fan_fs_mode(w) && nx_fan_fs_above(nx, n, fa->cur_fid))
		mask &= ~(uint64_t)FAN_CREATE; /* so did one ahead of it */
	count = nx_fan_split(mask, both && exists_now(nx, n, name, nlen), types);
	for (size_t i = 0; i < count && !w->ended && !n->dead; i++) {
		/* nx_fan_entry_path again: nx_fan_add_subdir and emit may have used path[0] */
		len = nx_fan_entry_path(fa, n, name, nlen, 0);
		if (types[i] == NOTIFYX_DELETE) {
			nx_fan_sup_take(fa, n, name, nlen);
			nx_emit(nx, w, NOTIFYX_DELETE, flags, 0, 0, fa->path[0], len, NULL, 0);
			if (isdir)
				nx_fan_bury(nx, nx_node_find(&nx->paths, n, name, nlen));
		} else if (types[i] == NOTIFYX_CREATE) {
			nx_emit(nx, w, NOTIFYX_CREATE, flags, 0, 0, fa->path[0], len, NULL, 0);
			if (isdir && nx_fan_fs_mode(w))
				nx_fan_node_by_id(nx, n, name, nlen, fa->cur_fid);
			else if (isdir && !nx_excluded(nx, w, fa->path[0], name))
				created_dir(nx, n, name, nlen);
		} else {
			nx_emit(nx, w, types[i], flags, 0, 0, fa->path[0], len, NULL, 0);
		}
	}
}

/* An event on the object of node n itself (a watch root, or a directory
 * that its parent names). */
static void self_event(struct notifyx *nx, struct nx_node *n, uint64_t mask, bool isdir)
{
	struct nx_watch *w = nx_node_watch(n);
	uint32_t flags = isdir ? NOTIFYX_EVENT_ISDIR : 0, types[8];
	size_t count;

	if (n->parent) {
		/* Named by its parent; its end comes as the parent's DELETE or RENAME. */
		mask &= ~(uint64_t)(FAN_CREATE | FAN_DELETE | FAN_DELETE_SELF | FAN_MOVE_SELF);
		if (mask)
			child_event(nx, n->parent, mask | (isdir ? FAN_ONDIR : 0), nx_node_name(n), nx_node_name_len(n));
		return;
	}
	count = nx_fan_split(mask & ~(uint64_t)(FAN_CREATE | FAN_DELETE), false, types);
	for (size_t i = 0; i < count; i++)
		nx_emit(nx, w, types[i], flags, 0, 0, "", 0, NULL, 0);
	if (mask & FAN_MOVE_SELF) {
		nx_emit(nx, w, NOTIFYX_MOVE_SELF, flags, 0, 0, "", 0, NULL, 0);
		if (!w->ended) /* (a ONESHOT watch ended in nx_emit) */
			nx_fan_guard_root(nx, w);
	}
	if (mask & FAN_DELETE_SELF) {
		nx_emit(nx, w, NOTIFYX_DELETE_SELF, flags, 0, 0, "", 0, NULL, 0);
		nx_end_watch(nx, w);
	}
}

static bool fresh(const void *fa, const struct nx_node *s)
{
	return !nx_fan_stale(fa, s);
}

/*
 * The kernel merges an unread deletion into an unread record of the same
 * object at the same name (its creation, say), where that record was
 * queued: record r, deleting entry name of directory k, may be older than
 * a repair of a watch that the deletion came after.  That repair's listing
 * may have seen the entry, and r is the only record to say that it went
 * (seen in tests/mirror-rescan.sh, fanotify-fs, the last operation of a
 * seed): for such a watch, r's deletion is delivered when the model has
 * the entry and the name is gone now.
 */
static void merged_delete(struct notifyx *nx, const struct kobj *k, const struct fanrec *r)
{
	struct fan *fa = fan_of(nx);
	/* (The watches r is stale for: fresh ones are dropped.) */
	size_t count = nx_kt_subscribers(nx, k->subs, fresh, fa, &fa->vec[0], &fa->vec_cap[0]);

	for (size_t i = 0; i < count; i++) {
		struct nx_node *s = fa->vec[0][i];
		size_t len;
		if (s->dead || !nx_node_watch(s)->rescan)
			continue;
		len = nx_fan_entry_path(fa, s, r->name.name, r->name.len, 0);
		if (len != SIZE_MAX && nx_rescan_has(nx_node_watch(s), fa->path[0], len) &&
		    !exists_now(nx, s, r->name.name, r->name.len))
			child_event(nx, s, r->mask & (FAN_DELETE | FAN_ONDIR), r->name.name,
				    r->name.len);
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
		if (!(k = nx_fan_kobj_get(nx, &r->dfid)))
			return;
		if (nx_map_get(&fa->listed, k->key))
			mask &= ~(uint64_t)(FAN_OPEN | FAN_ACCESS | FAN_CLOSE_NOWRITE);
		count = nx_fan_subscribers(nx, k, 0);
		for (size_t i = 0; i < count; i++)
			if (!fa->vec[0][i]->dead)
				self_event(nx, fa->vec[0][i], mask, true);
		return;
	}
	if (r->dfid.len && (k = nx_fan_kobj_get(nx, &r->dfid))) {
		count = nx_fan_subscribers(nx, k, 0);
		for (size_t i = 0; i < count; i++)
			if (!fa->vec[0][i]->dead)
				child_event(nx, fa->vec[0][i], r->mask, r->name.name, r->name.len);
		if (r->mask & FAN_DELETE)
			merged_delete(nx, k, r);
	}
	if ((r->mask & FAN_DELETE) && r->fid.len && (k = nx_fan_kobj_find(fa, &r->fid)) && k->isdir)
		root_deleted(nx, k);
	/* A watched file (the object of the event) hears of itself. */
	if (r->fid.len && (k = nx_fan_kobj_find(fa, &r->fid)) && !k->isdir) {
		count = nx_fan_subscribers(nx, k, 1);
		for (size_t i = 0; i < count; i++)
			if (!fa->vec[1][i]->dead && !fa->vec[1][i]->parent)
				self_event(nx, fa->vec[1][i], r->mask, false);
	}
}

/* ---- reading ---- */

/*
 * A directory made and removed before its records are read is one record
 * (creation and deletion merged, see below), ahead of the records of what
 * was made in it and moved out of it meanwhile, which the watches with
 * filesystem marks place by the node its creation made (child_event, by
 * identifier: no walk can find it).  Its deletion comes after the last of
 * them in buf: that position, or SIZE_MAX when there is none.
 */
static size_t last_inside(struct fan *fa, size_t pos, const struct fanrec *r)
{
	size_t at = SIZE_MAX;
	struct fanrec x;

	for (size_t p = pos + r->size; p < fa->len; p += x.size) {
		bool ok = nx_fan_decode(fa->buf, fa->len, p, &x);
		if (!x.size)
			break;
		if (ok && (nx_fan_same_id(&x.dfid, &r->fid) || nx_fan_same_id(&x.odfid, &r->fid)))
			at = p;
	}
	return at;
}

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
	if (fa->nfswatches && (r->mask & (FAN_CREATE | FAN_ONDIR)) == (FAN_CREATE | FAN_ONDIR)) {
		nx_fan_read_ahead(fa); /* all of them were queued before the deletion */
		return last_inside(fa, pos, r);
	}
	while (fa->ren_indexed < fa->len) {
		bool ok = nx_fan_decode(fa->buf, fa->len, fa->ren_indexed, &x);
		if (!x.size)
			break;
		if (ok && (x.mask & FAN_RENAME) && x.fid.len)
			nx_map_put(&fa->renames, x.fid.key, (void *)(fa->ren_indexed + 1));
		fa->ren_indexed += x.size;
	}
	at = (uintptr_t)nx_map_get(&fa->renames, r->fid.key);
	if (at-- <= pos + 1 || !nx_fan_decode(fa->buf, fa->len, at, &x) ||
	    !nx_fan_same_id(&x.fid, &r->fid))
		return SIZE_MAX;
	return at;
}

/* Queues the deletion of record r to come after the record at after (a
 * copy of r: the batch may end first, see handle_records): false when it
 * cannot be remembered (it then comes where it is). */
static bool defer_delete(struct fan *fa, const struct fanrec *r, size_t pos, size_t after)
{
	char *rec;

	if (fa->nlate == fa->late_cap) {
		size_t cap = fa->late_cap ? 2 * fa->late_cap : 16;
		struct late *v = realloc(fa->late, cap * sizeof(*v));
		if (!v)
			return false;
		fa->late = v;
		fa->late_cap = cap;
	}
	if (!(rec = malloc(r->size)))
		return false;
	memcpy(rec, fa->buf + pos, r->size);
	fa->late[fa->nlate++] = (struct late){ rec, r->size, after };
	return true;
}

/* The deferred deletions whose record (or rename) was handled: those
 * before pos, or all. */
static void late_deletes(struct notifyx *nx, size_t pos, bool all)
{
	struct fan *fa = fan_of(nx);
	struct fanrec r;
	size_t j = 0;

	for (size_t i = 0; i < fa->nlate; i++) {
		struct late *l = &fa->late[i];
		if (!all && l->after >= pos) {
			fa->late[j++] = *l;
			continue;
		}
		if (nx_fan_decode(l->rec, l->len, 0, &r)) {
			r.mask &= FAN_DELETE | FAN_ONDIR;
			plain_event(nx, &r);
		}
		free(l->rec);
	}
	fa->nlate = j;
}

/* Opens (O_PATH) the directory of identifier id, when the library can
 * reach it: by its handle on a filesystem it marks, else by a node of a
 * watch. */
static int open_dir_id(struct notifyx *nx, const struct fanid *id)
{
	struct fan *fa = fan_of(nx);
	struct fsmark *fm = id->len >= 16 ? nx_fan_fsmark_of(fa, id->data) : NULL;
	struct kobj *k;
	struct nx_node *n;

	if (fm)
		return nx_fan_open_handle(fa, fm, id->data, id->len);
	k = nx_fan_kobj_find(fa, id);
	for (size_t si = 0; k && (n = nx_subs_get(k->subs, si)); si++)
		if (!n->dead)
			return nx_fan_open_node(nx, n);
	return -1;
}

/* True when what the rename of record r queued is surely in the kernel
 * queue (nx_kt_rename_over); false when neither directory can be reached.
 * The rename holds the locks of both: the new one serves where the old one
 * is not in the record (inode marks report only the watched ends: a move
 * in from an unwatched directory) or cannot be opened. */
static bool rename_queued(struct notifyx *nx, const struct fanrec *r)
{
	const char *name = r->oname.name;
	int fd = r->odfid.len && r->oname.len ? open_dir_id(nx, &r->odfid) : -1;
	bool over;

	if (fd < 0 && r->ndfid.len && r->nname.len) {
		fd = open_dir_id(nx, &r->ndfid);
		name = NULL; /* the new name: in the cache */
	}
	if (fd < 0)
		return false;
	over = nx_kt_rename_over(nx, fd, name);
	close(fd);
	return over;
}

/* The last record of buf is the FAN_RENAME r: the second FAN_RENAME of an
 * exchange is queued by the same system call just after the first, and a
 * read can come between the two.  True when the kernel has more once the
 * rename is known to be done (rename_queued), else within a millisecond
 * (once per record): then read it, and pair them. */
static bool second_half(struct notifyx *nx, const struct fanrec *r)
{
	struct fan *fa = fan_of(nx);
	struct pollfd p = { .fd = fa->fd, .events = POLLIN };

	if (fa->more)
		return true;
	if (fa->waited)
		return false;
	fa->waited = true;
	return poll(&p, 1, rename_queued(nx, r) ? 0 : 1) > 0;
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
		fa->cur = nx_fan_seq(fa, pos);
		fa->next = pos + r.size;
		if (ok && !r.mask) { /* an exchange's second half, handled with its first */
			pos += r.size;
			continue;
		}
		if (ok && (r.mask & FAN_RENAME) &&
		    nx_fan_next_rename(fa->buf, fa->len, pos, &r) == SIZE_MAX && second_half(nx, &r))
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
			pos += nx_fan_rename_event(nx, pos, &r);
		} else {
			if ((after = delete_after(fa, pos, &r)) != SIZE_MAX &&
			    defer_delete(fa, &r, pos, after))
				r.mask &= ~(uint64_t)FAN_DELETE;
			plain_event(nx, &r);
			pos += r.size;
		}
		if (fa->nlate)
			late_deletes(nx, pos, false);
	}
	/* A batch that ends at a rename (its second half is read next) leaves
	 * the records the deferred deletions wait for to the next one. */
	if (pos < fa->len)
		for (size_t i = 0; i < fa->nlate; i++)
			fa->late[i].after -= pos;
	else
		late_deletes(nx, pos, true);
	fa->cur = UINT64_MAX;
	nx_map_free(&fa->renames);
	nx_fan_consume(fa, pos);
}

int nx_fan_process(struct notifyx *nx, unsigned flags)
{
	struct fan *fa = fan_of(nx);
	int ret = 0, err = 0;
	bool dry = false;

	nx_fan_check_mounts(nx);
	for (unsigned rounds = 1;; rounds++) {
		ssize_t n = nx_fan_read(fa, READ_BUF);
		if (n < 0) {
			ret = -1;
			err = errno;
			break;
		}
		if (!n && !fa->len) {
			if (nx_fan_close_mount_fds(fa))
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
	nx_fan_close_mount_fds(fa);
	if (dry)
		nx_fan_dry_point(nx);
	errno = err;
	return ret;
}
