/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The fanotify backend (fanotify.c): reading the kernel queue, and the
 * directories of filesystem marks, found on demand. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fanotify-int.h"
#include "ktree.h"
#include "treepath.h"

/* ---- reading the kernel queue ---- */

/* Indexes the directory moves among the records read since the last call,
 * and with lazy watches the directory deletions too.  Only resolve() looks
 * for them, and calls it: reading decodes nothing twice when no directory
 * is to be found. */
static void index_moves(struct fan *fa)
{
	struct fanrec r;

	while (fa->indexed < fa->len) {
		bool ok = nx_fan_decode(fa->buf, fa->len, fa->indexed, &r);
		if (!r.size) /* a length that cannot be trusted: see handle_records */
			break;
		bool moved = (r.mask & FAN_RENAME) && r.odfid.len && r.oname.len;
		bool gone = fa->nlazy && (r.mask & FAN_DELETE) && r.dfid.len && r.name.len;
		if (ok && (moved || gone) && (r.mask & FAN_ONDIR) && r.fid.len) {
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
			fa->pending[fa->npending++] =
				(struct pending){ fa->indexed, r.fid.key, !moved };
		}
		fa->indexed += r.size;
	}
	fa->indexed = fa->len;
}

/* One read of the kernel queue into buf, after what it holds: the bytes
 * read, 0 when there was nothing, -1 on error. */
ssize_t nx_fan_read(struct fan *fa, size_t size)
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
	/* buf ends with another record: second_half() may wait for what
	 * follows it (whatever waits this call made before). */
	fa->waited = false;
	return n;
}

/* Reads the kernel queue dry into buf, behind the records not handled yet,
 * so that the directory moves that followed the record being handled are
 * known: false when it could not (buf full, an error). */
bool nx_fan_read_ahead(struct fan *fa)
{
	for (;;) {
		ssize_t n;
		if (READ_AHEAD_MAX - fa->len < READ_BUF)
			return false;
		if ((n = nx_fan_read(fa, READ_BUF)) <= 0)
			return n == 0 && !fa->unsure;
		fa->ahead = true;
	}
}

/* The length of the record at pos in buf, 0 when it cannot be trusted. */
static size_t record_len(const struct fan *fa, size_t pos)
{
	uint32_t len;

	if (fa->len - pos < sizeof(struct fanotify_event_metadata))
		return 0;
	memcpy(&len, fa->buf + pos, sizeof(len));
	return len >= sizeof(struct fanotify_event_metadata) && len <= fa->len - pos ? len : 0;
}

uint64_t nx_fan_seq(struct fan *fa, size_t pos)
{
	size_t len;

	while (fa->seq_at < pos && (len = record_len(fa, fa->seq_at))) {
		fa->seq_at += len;
		fa->seq++;
	}
	if (fa->seq_at < pos) /* a length that cannot be trusted: skipped with it */
		fa->seq_at = pos;
	return fa->seq;
}

uint64_t nx_fan_seq_next(const struct fan *fa)
{
	uint64_t seq = fa->seq;
	size_t at = fa->seq_at, len;
	int queued = 0;

	while (at < fa->len && (len = record_len(fa, at))) {
		at += len;
		seq++;
	}
	/* fanotify's FIONREAD counts FAN_EVENT_METADATA_LEN per record queued,
	 * whatever the record's length (checked on 6.18). */
	if (ioctl(fa->fd, FIONREAD, &queued) == 0 && queued > 0)
		seq += (uint64_t)queued / FAN_EVENT_METADATA_LEN;
	return seq;
}

bool nx_fan_stale(const struct fan *fa, const struct nx_node *s)
{
	const struct fwatch *fw = nx_node_watch(s)->bdata;

	return fw && fa->cur < fw->since;
}

/* The records before pos were handled: they leave buf. */
void nx_fan_consume(struct fan *fa, size_t pos)
{
	size_t j = 0;

	nx_fan_seq(fa, pos);
	fa->seq_at -= pos;

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
bool nx_fan_close_mount_fds(struct fan *fa)
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

struct fsmark *nx_fan_fsmark_of(const struct fan *fa, const unsigned char *fsid)
{
	struct fsmark *m = nx_map_get(&fa->fsmarks, nx_fan_key(fsid, 8));

	return m && !memcmp(m->fsid, fsid, 8) ? m : NULL;
}

/* A directory on the way up from one being resolved. */
struct link {
	int fd;               /* -1: known only by a record that names it */
	bool requeued;        /* found deleted once, the kernel queue read again */
	char name[NAME_MAX + 1]; /* its name in the next one up */
	size_t name_len;
	size_t idlen;
	uint64_t key;
	unsigned char id[ID_MAX];
};

#define RESOLVE_DEPTH (PATH_MAX / 2)

/* The first FAN_RENAME (or deletion, see index_moves) not handled yet of
 * directory id (key): where it was when the event being handled happened,
 * in out->odfid and out->oname.  False when none. */
static bool pending_move(struct fan *fa, const unsigned char *id, size_t idlen, uint64_t key,
			 struct fanrec *out)
{
	while (fa->pend_start < fa->npending && fa->pending[fa->pend_start].pos < fa->next)
		fa->pend_start++;
	for (size_t i = fa->pend_start; i < fa->npending; i++) {
		if (fa->pending[i].key == key &&
		    nx_fan_decode(fa->buf, fa->len, fa->pending[i].pos, out) &&
		    out->fid.len == idlen && !memcmp(out->fid.data, id, idlen)) {
			if (fa->pending[i].gone) {
				out->odfid = out->dfid;
				out->oname = out->name;
			}
			return true;
		}
	}
	return false;
}

/* True when one of the n directories of chain was moved by a record at pos
 * from or after (a deletion leaves where it was as it was). */
static bool moved_since(const struct fan *fa, size_t from, const struct link *chain, size_t n)
{
	for (size_t i = fa->npending; i-- > fa->pend_start && fa->pending[i].pos >= from;) {
		if (fa->pending[i].gone)
			continue;
		for (size_t j = 0; j < n; j++)
			if (fa->pending[i].key == chain[j].key)
				return true;
	}
	return false;
}

/* Is k placed for every watch with filesystem marks (fsgen: since the last
 * of them was added)?  A lazy watch (nx_fan_lazy) has a node only for the
 * directories events named, and loses it when its subtree leaves; a walk
 * or a move of another watch can make k current meanwhile: so with lazy
 * watches, each of them must also have a node for k, or have been found by
 * resolve() not to hold it (fa->lazy_outside, forgotten at each directory
 * rename, which can bring k into one). */
static bool current(const struct fan *fa, const struct kobj *k)
{
	const struct nx_node *s;
	unsigned lazy = 0;

	if (k->gen != fa->fsgen)
		return false;
	if (!fa->nlazy)
		return true;
	for (size_t si = 0; (s = nx_subs_get(k->subs, si)); si++)
		lazy += !s->dead && nx_fan_lazy(nx_node_watch(s));
	return lazy + (uintptr_t)nx_map_get(&fa->lazy_outside, k->key) >= fa->nlazy;
}

/* True when the directory of l is where the events read so far put it for
 * the watches with filesystem marks: nothing above it needs to be known. */
static bool anchored(const struct fan *fa, const struct link *l)
{
	struct fanid id = { l->id, l->idlen, l->key };
	const struct kobj *k = nx_fan_kobj_find(fa, &id);

	if (!k || !current(fa, k))
		return false;
	const struct nx_node *s;

	for (size_t si = 0; (s = nx_subs_get(k->subs, si)); si++)
		if (!s->dead && nx_fan_fs_mode(nx_node_watch(s)))
			return true;
	return false;
}

/* Opens (O_PATH) the object of identifier id on the filesystem of mfd, which
 * must be a real open (the kernel takes no O_PATH one there).  Needs
 * CAP_DAC_READ_SEARCH. */
int nx_fan_open_id(int mfd, const unsigned char *id, size_t idlen)
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

int nx_fan_open_handle(struct fan *fa, struct fsmark *fm, const unsigned char *id,
		       size_t idlen)
{
	int mfd = mount_fd(fa, fm);

	return mfd < 0 ? -1 : nx_fan_open_id(mfd, id, idlen);
}

/* The node of kobj k in watch w, if any. */
static struct nx_node *node_in(const struct kobj *k, const struct nx_watch *w)
{
	struct nx_node *s;

	for (size_t si = 0; k && (s = nx_subs_get(k->subs, si)); si++)
		if (nx_node_watch(s) == w && !s->dead)
			return s;
	return NULL;
}

/* The name of directory st (of link l) in directory up, found by reading
 * up (its path from "/" is longer than PATH_MAX, which readlink cannot
 * give): false when it is not there. */
static bool name_in(struct fan *fa, const struct link *up, const struct stat *st, struct link *l)
{
	_Alignas(8) char buf[8192];
	struct stat cst;
	ssize_t n;
	bool found = false;
	int fd = openat(up->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return false;
	nx_map_put(&fa->listed, up->key, (void *)1); /* its OPEN and CLOSE are ours */
	while (!found && (n = getdents64(fd, buf, sizeof(buf))) > 0) {
		for (ssize_t pos = 0; pos < n && !found;) {
			struct dirent64 *d = (struct dirent64 *)(void *)(buf + pos);
			size_t len = strlen(d->d_name);
			pos += d->d_reclen;
			if (d->d_ino != st->st_ino || len > NAME_MAX ||
			    fstatat(up->fd, d->d_name, &cst, AT_SYMLINK_NOFOLLOW) < 0 ||
			    cst.st_ino != st->st_ino || cst.st_dev != st->st_dev)
				continue;
			memcpy(l->name, d->d_name, len + 1);
			l->name_len = len;
			found = true;
		}
	}
	close(fd);
	return found;
}

/* Goes up from directory chain[0] (open, its identifier set) to the top of
 * its filesystem, or to a directory anchored, as things were when the event
 * being handled happened: by "..", or, where a move not handled yet moved a
 * directory, by where it was before.  Returns the number of links; the fd
 * of the last one is -1 when it was anchored by a move's record alone. */
static size_t climb(struct notifyx *nx, struct link *chain, size_t max, bool *whole)
{
	struct fan *fa = fan_of(nx);
	char kpath[32], *path = fa->path[3];
	size_t n = 1;

	*whole = false;

	while (n < max) {
		struct link *l = &chain[n - 1], *up = &chain[n];
		struct fanrec pr;
		struct stat st;
		ssize_t len;
		char *slash;
		up->requeued = false;
		if (nx_map_get(&fa->outside, l->key) || (n > 1 && anchored(fa, l))) {
			*whole = true;
			break;
		}
		if (pending_move(fa, l->id, l->idlen, l->key, &pr)) {
			struct fsmark *fm = nx_fan_fsmark_of(fa, l->id);
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
			if (anchored(fa, up)) {
				*whole = true;
				return n + 1;
			}
			/* Gone too, with lazy watches: its own deletion or move,
			 * further on, says where it was. */
			if (!fm || ((up->fd = nx_fan_open_handle(fa, fm, up->id, up->idlen)) < 0 &&
				    !(errno == ESTALE && fa->nlazy)))
				break;
			n++;
			continue;
		}
		if (l->fd < 0)
			break; /* gone, and no record says where it was */
		snprintf(kpath, sizeof(kpath), "/proc/self/fd/%d", l->fd);
		len = readlink(kpath, path, PATH_MAX - 1);
		if (len == PATH_MAX - 1) { /* cut short */
			len = -1;
			errno = ENAMETOOLONG;
		}
		if (len <= 0 && errno != ENAMETOOLONG)
			break;
		/* After the path: one deleted meanwhile ends in " (deleted)". */
		if (fstat(l->fd, &st) < 0)
			break;
		if (!st.st_nlink && fa->nlazy && !l->requeued) {
			/* Deleted since it was opened: its deletion is queued. */
			l->requeued = true;
			nx_fan_read_ahead(fa);
			index_moves(fa);
			continue;
		}
		if (!st.st_nlink)
			break; /* gone */
		up->fd = openat(l->fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (up->fd < 0)
			break;
		/* Up across mount points too: a filesystem mounted in a tree. */
		if (nx_fan_fd_id(up->fd, up->id, &up->idlen, NULL) < 0 ||
		    (up->idlen == l->idlen && !memcmp(up->id, l->id, l->idlen))) {
			*whole = up->idlen == l->idlen && !memcmp(up->id, l->id, l->idlen);
			close(up->fd); /* the top */
			break;
		}
		up->key = nx_fan_key(up->id, up->idlen);
		if (len > 0 && path[0] == '/') {
			path[len] = '\0';
			slash = strrchr(path, '/');
			l->name_len = strlen(slash + 1);
			memcpy(l->name, slash + 1, l->name_len + 1);
		} else if (len > 0 || !name_in(fa, up, &st, l)) {
			close(up->fd);
			break;
		}
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
	struct fsmark *fm = id->len >= 16 ? nx_fan_fsmark_of(fa, id->data) : NULL;
	struct link *chain;
	struct nx_watch *w;
	size_t n = 0, pos = 0, broke = 0; /* links below broke: a watch stopped there */
	bool inside = false, behind = false, sure, whole = false;
	uintptr_t lazy_out = 0; /* lazy watches that hold none of the chain */
	int fd;

	if (!fm || id->len > ID_MAX)
		return nx_fan_kobj_find(fa, id);
	if (!(chain = malloc(RESOLVE_DEPTH * sizeof(*chain))))
		return nx_fan_kobj_find(fa, id);
	sure = nx_fan_read_ahead(fa);
	index_moves(fa);
	for (int tries = 0;; tries++) {
		size_t seen = fa->len;
		if ((fd = nx_fan_open_handle(fa, fm, id->data, id->len)) < 0 &&
		    !(errno == ESTALE && fa->nlazy)) {
			/* Gone: a handle is never reused, nothing will be found
			 * there (lazy watches: but its records say where it
			 * was, see climb). */
			if (errno == ESTALE)
				nx_map_put(&fa->outside, id->key, (void *)1);
			free(chain);
			return nx_fan_kobj_find(fa, id);
		}
		chain[0].fd = fd;
		chain[0].requeued = false;
		chain[0].idlen = id->len;
		chain[0].key = id->key;
		memcpy(chain[0].id, id->data, id->len);
		n = climb(nx, chain, RESOLVE_DEPTH, &whole);
		/* Gone, and no record says where it was: a directory removed
		 * a moment ago (its handle is stale before its deletion is
		 * queued) has it queued within a millisecond. */
		bool stuck = fa->nlazy && chain[n - 1].fd < 0 && !anchored(fa, &chain[n - 1]) &&
			     tries < CLIMB_TRIES;
		if (stuck)
			poll(&(struct pollfd){ .fd = fa->fd, .events = POLLIN }, 1, 1);
		sure = nx_fan_read_ahead(fa) && sure;
		index_moves(fa);
		if (!moved_since(fa, seen, chain, n) && !(stuck && fa->len > seen))
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
				node = node_in(nx_fan_kobj_find(fa, &lid), w);
			if (node)
				break;
		}
		if (!node) {
			lazy_out += nx_fan_lazy(w);
			continue;
		}
		/* Down from there: nodes known by identifier are where the
		 * events read so far put them; the others are made by name. */
		size_t j = top;
		while (node && j-- > 0) {
			struct link *l = &chain[j];
			struct fanid lid = { l->id, l->idlen, l->key };
			struct nx_node *c = node_in(nx_fan_kobj_find(fa, &lid), w);
			struct stat st;
			if (c && c->parent == node)
				goto next;
			c = nx_node_find(&nx->paths, node, l->name, l->name_len);
			bool other = c && c->kref && ((struct kobj *)c->kref)->key != l->key;
			/* The table is made of listings, which can be ahead of
			 * the event (made after it): a directory it does not
			 * have where the event was is one that left a directory
			 * before that was listed.  Its events are in the
			 * listing of where it went, made when its move is read
			 * (as with inode marks, which hear nothing of a
			 * directory until they list it).  A lazy watch's table
			 * is made of events: it is made here. */
			if (!nx_fan_lazy(w) && (!c || other)) {
				behind = true;
				node = NULL;
				break;
			}
			if (l->fd < 0) { /* gone: placed by the record that says so */
				node = nx_fan_node_by_id(nx, node, l->name, l->name_len, &lid);
				continue;
			}
			if (other) { /* the name held another directory */
				nx_fan_bury(nx, c);
				c = NULL;
			}
			if (!c) {
				char *rel = fa->path[1];
				size_t len = nx_fan_entry_path(fa, node, l->name, l->name_len, 1);
				if (len == SIZE_MAX && nx_fan_lazy(w))
					nx_fan_too_long(nx, node); /* (a walk says so at once) */
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
			if (!c->kref && nx_fan_attach(nx, c, l->fd, 0) < 0) {
				nx_lost(nx, w);
				node = NULL;
				break;
			}
next:
			node = c;
		}
		if (!node && j + 1 > broke)
			broke = j + 1;
		inside |= node != NULL;
	}
	if (fa->outside.len >= OUTSIDE_MAX)
		nx_map_free(&fa->outside);
	for (size_t i = 0; i < n && !inside && !behind && sure; i++) /* nor is anything above it */
		nx_map_put(&fa->outside, chain[i].key, (void *)1);
	/* The directories on the way that every watch holding them has a
	 * node for (where no watch stopped) are current too: with lazy
	 * watches nothing else makes them so, and the next event in one of
	 * them would climb again. */
	for (size_t i = broke > 1 ? broke : 1; fa->nlazy && sure && i < n; i++) {
		struct fanid lid = { chain[i].id, chain[i].idlen, chain[i].key };
		struct kobj *up = nx_fan_kobj_find(fa, &lid);
		if (up && up->subs)
			up->gen = fa->fsgen;
	}
	if (lazy_out && whole && sure && inside)
		nx_map_put(&fa->lazy_outside, id->key, (void *)lazy_out);
	else if (fa->lazy_outside.len)
		nx_map_del(&fa->lazy_outside, id->key);
	close_chain(chain, n);
	free(chain);
	struct kobj *k = nx_fan_kobj_find(fa, id);
	if (k && inside)
		k->gen = fa->fsgen;
	return k;
}

/* A kobj known, or found on demand: once per kobj for the fsmode watches
 * there are (fsgen counts their changes). */
struct kobj *nx_fan_kobj_get(struct notifyx *nx, const struct fanid *id)
{
	struct fan *fa = fan_of(nx);
	struct kobj *k = nx_fan_kobj_find(fa, id);

	if (!fa->nfswatches || (k && current(fa, k)) || nx_map_get(&fa->outside, id->key))
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
	if (nx_fan_fd_id(fd, id, &len, NULL) < 0)
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
	if (!(fm = nx_fan_fsmark_of(fa, id))) {
		/* Handles are decoded against the mount point: unlike the
		 * watch root, it cannot be renamed while mounted. */
		char *mp = mount_point(nx_fan_mnt_of(fd));
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
		if (mfd >= 0 && nx_fan_fd_id(mfd, id, &len, NULL) == 0)
			fm->dirkey = nx_fan_key(id, len);
		if (mfd >= 0)
			close(mfd);
	}
	if ((mask & ~fm->kmask) &&
	    nx_fan_mark_fd(fa, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, fm->kmask | mask, fd) < 0) {
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
	fw->mnts[fw->nmarks++] = nx_fan_mnt_of(fd);
	close(fd);
	return 0;
fail:
	err = errno;
	close(fd);
	errno = err;
	return -1;
}

void nx_fan_fs_unmark(struct notifyx *nx, struct fwatch *fw)
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
int nx_fan_fs_add_watch(struct notifyx *nx, struct nx_watch *w, int fd)
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
	if (nx_fan_attach(nx, w->root, fd, 0) < 0 || fs_mark(nx, w, fw->root, mask) < 0 ||
	    (!(w->flags & NOTIFYX_WATCH_XDEV) && fs_mark_submounts(nx, w, mask) < 0))
		goto fail;
	fa->nfswatches++;
	fa->fsgen++;
	nx_map_free(&fa->outside); /* some of it is inside now */
	nx_map_free(&fa->lazy_outside);
	if (!(w->flags & (NOTIFYX_WATCH_LIST | NOTIFYX_WATCH_RESCAN))) {
		fw->lazy = true; /* see nx_fan_lazy */
		fa->nlazy++;
		return 0;
	}
	/* The tree is walked to be listed: every directory is a node from the
	 * start, placed by the listing, so that the events of a directory
	 * deleted (or moved away) before they are read are placed by
	 * identifier.  fw->fsmode stays set on failure: the caller undoes the
	 * marks, and does not fall back to inode marks, whose listing would
	 * repeat the one already queued. */
	fa->path[2][0] = '\0';
	if (nx_fan_walk(nx, w->root, fd, ".", fa->path[2], 0, w->flags & NOTIFYX_WATCH_LIST,
			true) < 0 ||
	    w->ended)
		return -1;
	return 0;
fail:
	err = errno;
	fw->fsmode = false;
	nx_fan_fs_unmark(nx, fw);
	nx_fan_detach(nx, w->root);
	errno = err;
	return -1;
}

/* Filesystem marks: true when the table has directory id, in n's watch, at n
 * or above it.  A directory made in n cannot be there: a listing made after
 * it moved there (its records not read yet) put it there, and showed it
 * made. */
bool nx_fan_fs_above(struct notifyx *nx, const struct nx_node *n, const struct fanid *id)
{
	const struct nx_node *s = node_in(id ? nx_fan_kobj_find(fan_of(nx), id) : NULL,
					  nx_node_watch(n));

	return s && nx_within(n, s);
}

/* Filesystem marks: a directory that an event names with its identifier (a
 * mkdir, a rename) becomes a node at once, at the place the event gives, so
 * that the table follows the events (no look-up by the path of now). */
struct nx_node *nx_fan_node_by_id(struct notifyx *nx, struct nx_node *parent, const char *name,
				  size_t len, const struct fanid *id)
{
	struct fan *fa = fan_of(nx);
	struct nx_watch *w = nx_node_watch(parent);
	struct nx_node *c;
	struct kobj *k;

	if (!id || id->len < 16 || id->len > ID_MAX || !nx_fan_fs_mode(w))
		return NULL;
	c = nx_node_find(&nx->paths, parent, name, len);
	if (c && c->kref && ((struct kobj *)c->kref)->key == id->key)
		return c;
	if (nx_fan_entry_path(fa, parent, name, len, 1) == SIZE_MAX) {
		nx_fan_too_long(nx, parent);
		return NULL;
	}
	if (nx_excluded(nx, w, fa->path[1], name))
		return NULL;
	if (c)
		nx_fan_bury(nx, c); /* the name held another directory */
	if (!(k = nx_fan_kobj_find(fa, id))) {
		if (nx_map_get(&fa->kobjs, id->key))
			return NULL;
		if (!(k = nx_fan_kobj_new(fa, id, true))) {
			nx_lost(nx, w); /* its events cannot be placed */
			return NULL;
		}
		k->mnt_id = parent->kref ? ((struct kobj *)parent->kref)->mnt_id : 0;
		k->gen = fa->fsgen;
	}
	/* Another node of this watch for it is stale. */
	struct nx_node *s = node_in(k, w);
	if (s && s->parent)
		nx_fan_bury(nx, s);
	if (!(k = nx_fan_kobj_find(fa, id)))
		return nx_fan_node_by_id(nx, parent, name, len, id);
	if (!(c = nx_node_add(&nx->paths, parent, name, len))) {
		nx_lost(nx, w); /* its events cannot be placed */
		return NULL;
	}
	if (nx_subs_add(&k->subs, c) < 0) {
		nx_node_free_tree(&nx->paths, c, NULL, NULL);
		nx_lost(nx, w);
		return NULL;
	}
	c->kref = k;
	return c;
}
