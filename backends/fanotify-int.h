/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The fanotify backend's private header: its state, and the functions its
 * files share (each is described where it is defined).  Included by the
 * backend's own files only (fanotify.c, fanotify-*.c; see HACKING). */
#ifndef NX_FANOTIFY_INT_H
#define NX_FANOTIFY_INT_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/fanotify.h>
#include <sys/types.h>

#include "fanotify.h"
#include "nx.h"

/* Newer than some installed headers (see KERNEL.md). */
#ifndef FAN_RENAME
#define FAN_RENAME 0x10000000
#endif

#define READ_BUF (64 * 1024)
/* Reads of READ_BUF one process() makes at most when no event is queued. */
#define PROCESS_ROUNDS 64
/* What the read buffer can hold when the kernel queue is read ahead (see
 * read_ahead): reserved, not used, until then. */
#define READ_AHEAD_MAX (32 * 1024 * 1024)
/* fsid (8) + struct file_handle header (8) + the handle (MAX_HANDLE_SZ). */
#define ID_MAX (16 + 128)

/* ---- state ---- */

struct kobj {
	uint64_t key;
	uint64_t kmask;       /* what the mark asks for (never narrowed); 0: not marked */
	uint64_t mnt_id;      /* the mount the library reached it through */
	uint64_t gen;         /* fsgen when it was last resolved */
	uint64_t listed_at;   /* the epoch of its last listing by nx_fan_walk() */
	nx_subs subs;         /* nodes of this inode */
	uint16_t idlen;
	bool isdir;
	bool arrived;         /* that listing was of a directory that arrived, not a
				 watch's first walk (whose records come after it, those
				 queued while it walked aside) */
	/* Its identifier, idlen bytes (a filesystem's handles are mostly
	 * 8-12 bytes, not the ID_MAX a kobj would hold inline: one per
	 * directory of a tree under a filesystem mark). */
	unsigned char id[];
};

struct deferred {
	struct nx_node *node;
	char *name;
	bool report;
};

/* A filesystem marked whole (FAN_MARK_FILESYSTEM) for recursive watches. */
struct fsmark {
	unsigned char fsid[8];
	char *path;           /* a directory on it, to decode handles against */
	uint64_t dirkey;      /* the kobj key of that directory */
	int mfd;              /* that directory open, or -1 (see mount_fd) */
	unsigned refs;        /* watches using it */
	uint64_t kmask;
};

/* The backend's part of a watch. */
struct fwatch {
	/* A recursive root is held (O_PATH), and everything below it reached
	 * from there (API.md 0.2): or, when the root is the root of a mount,
	 * its parent, with hname the root's name there (the library then
	 * keeps no filesystem from being unmounted).  -1: not held (a watch
	 * that is not recursive, as with inotify: it names the directories
	 * in its root only; or a root whose deletion could not be followed,
	 * see nx_fan_guard_root). */
	int hfd;
	char *hname;
	uint64_t guard;       /* the kobj key of the parent nx_fan_guard_root marked, or 0 */
	bool fsmode;          /* recursive through filesystem marks */
	bool lazy;            /* fsmode without a first walk (nx_fan_lazy) */
	char *root;           /* the root's canonical path (as /proc/self/fd says) */
	size_t root_len;
	struct fsmark **marks; /* filesystems it marked */
	uint64_t *mnts;       /* and their mount ids */
	size_t nmarks;
	/* Set up again by a repair (NOTIFYX_WATCH_RESCAN): the records before
	 * this one (struct fan's seq) were queued before the repair read the
	 * tree; what they say is in that reading already (nx_fan_stale). */
	uint64_t since;
};

/* A FAN_RENAME of a directory not handled yet: in buf at pos. */
struct pending {
	size_t pos;
	uint64_t key;         /* the directory's */
	bool gone;            /* its deletion (indexed only for lazy watches) */
};

struct fan {
	int fd;
	int fsmode;           /* filesystem marks: 1 work, -1 refused (no privilege), 0 untried */
	long inode_max;       /* recursive trees of at most this many directories: inode marks */
	unsigned nfswatches;  /* watches in fsmode */
	unsigned nlazy;       /* of which lazy (nx_fan_lazy) */
	uint64_t fsgen;       /* changes of the set of fsmode watches */
	uint64_t epoch;       /* since 1, one more at each dry point and watch added */
	size_t next;          /* in buf: where the records not handled yet start */
	const struct fanid *cur_fid; /* the object of the record being handled, or NULL */
	struct nx_map fsmarks; /* fsid key -> struct fsmark */
	struct nx_map outside; /* keys of directories found outside every fsmode tree */
	/* kobj key -> how many lazy watches resolve() found not to hold it */
	struct nx_map lazy_outside;
	int mnt_wake;         /* /proc/self/mountinfo in the epoll set: wakes the application */
	int mnt_check;        /* a private one: polled by process() itself */
	uint32_t cookie;
	struct nx_map kobjs;  /* key -> struct kobj */
	/* Events already reported or caused by the library itself. */
	struct nx_map suppress;
	struct nx_map listed; /* kobj keys of directories the library listed */
	/* Arrivals a listing ahead of them had done (fanotify-move.c), until the
	 * queue is read dry: (object, directory, name) keys, so that the
	 * departure from that place read later is done too. */
	struct nx_map skipped;
	/* Places (keys of object 0) where a listing found a directory that
	 * then left the table without an event (it was gone when opened,
	 * nx_fan_attach found it at a newer place, or would not attach it
	 * there: the table has it elsewhere), until the queue is read
	 * dry: the copy may have it there, so an arrival there is not one the
	 * copy never had. */
	struct nx_map stale;
	/* Keys of directories whose CREATE was reported but whose listing, by
	 * name, found another directory there (inode marks: it had moved on,
	 * and its old name was made again), until the queue is read dry: where
	 * one arrives, its entries are reported (listed as its CREATE would
	 * have listed them). */
	struct nx_map unlisted;
	struct nx_node *graveyard;
	struct nx_node **vec[2];
	size_t vec_cap[2];
	struct deferred *deferred;
	size_t ndeferred, deferred_cap;
	char path[4][PATH_MAX]; /* [0], [1]: event paths; [2]: a walk's; [3]: absolute */
	/* Records read (mmap'd, READ_AHEAD_MAX reserved; READ_BUF at a time
	 * unless read ahead).  Nothing moves while a record is handled. */
	char *buf;
	size_t len;
	bool more;            /* the kernel may hold more after buf's last record */
	bool ahead;           /* read ahead since buf was last empty */
	bool unsure;          /* a directory move may be missing from pending */
	bool waited;          /* waited for the record after buf's last (second_half) */
	/* Records are numbered in the order the kernel queued them: the one
	 * at seq_at in buf is number seq; cur is the one being handled
	 * (UINT64_MAX between batches). */
	uint64_t seq, cur;
	size_t seq_at;
	/* In nx_fan_repair: the time from which its walk counts what it
	 * reports (struct nx_kt_walk's made_from), 0 otherwise. */
	int64_t repair_from;
	/* With filesystem marks: the directory moves in buf not handled yet,
	 * in order from pending[pend_start]; records before pos indexed are
	 * indexed. */
	struct pending *pending;
	size_t npending, pend_start, pend_cap, indexed;
	/* Deletions put after a later rename of their object (see
	 * handle_records): the last FAN_RENAME in buf of each object moved
	 * (key -> position + 1), indexed up to ren_indexed; the records whose
	 * deletion waits, and the position after which it comes. */
	struct nx_map renames;
	size_t ren_indexed;
	struct late {
		char *rec;    /* a copy of the record */
		size_t len, after;
	} *late;
	size_t nlate, late_cap;
};

static inline struct fan *fan_of(const struct notifyx *nx)
{
	return nx->bdata;
}

/* fanotify.c: identifiers, marks, walking directories */
/* The identifier of the object open at fd, as fanotify's FID records give
 * it (fsid, handle); *mnt_id, unless NULL, its mount's id. */
int nx_fan_fd_id(int fd, unsigned char *id, size_t *len, uint64_t *mnt_id);
struct kobj *nx_fan_kobj_find(const struct fan *fa, const struct fanid *id);
/* A new kobj of identifier id (len <= ID_MAX), in fa->kobjs; NULL (ENOMEM)
 * when it cannot be. */
struct kobj *nx_fan_kobj_new(struct fan *fa, const struct fanid *id, bool isdir);
void nx_fan_drop_kobj(struct fan *fa, struct kobj *k);
uint64_t nx_fan_mnt_of(int fd);
int nx_fan_mark_fd(struct fan *fa, unsigned flags, uint64_t mask, int fd);
/* The key of the object with kobj key obj at the entry name of directory n
 * (fan->skipped, fan->stale). */
uint64_t nx_fan_place_key(uint64_t obj, const struct nx_node *n, const char *name, size_t len);
/* nx_fan_attach()'s how: mark the object; leave a directory the watch has
 * at another place there (ELOOP). */
enum { NX_FAN_MARK = 1, NX_FAN_STAY = 2 };
int nx_fan_attach(struct notifyx *nx, struct nx_node *n, int fd, unsigned how);
int nx_fan_open_node(struct notifyx *nx, struct nx_node *n);
void nx_fan_unmark(struct notifyx *nx, const struct kobj *k, int fd);
struct kobj *nx_fan_unsubscribe(struct nx_node *n);
void nx_fan_detach(struct notifyx *nx, struct nx_node *n);
void nx_fan_to_graveyard(struct notifyx *nx, struct nx_node *n);
void nx_fan_bury(struct notifyx *nx, struct nx_node *n);
bool nx_fan_sup_take(struct fan *fa, const void *node, const char *name, size_t len);
size_t nx_fan_entry_path(struct fan *fa, const struct nx_node *n, const char *name, size_t nlen,
			 int i);
void nx_fan_too_long(struct notifyx *nx, struct nx_node *n);
bool nx_fan_fs_mode(const struct nx_watch *w);
bool nx_fan_lazy(const struct nx_watch *w);
int nx_fan_walk(struct notifyx *nx, struct nx_node *n, int pfd, const char *name, char *rel,
		size_t rel_len, bool report, bool fatal);
void nx_fan_add_subdir(struct notifyx *nx, struct nx_node *n, const char *name, size_t nlen,
		       bool report, bool retry);
void nx_fan_list_moved_in(struct notifyx *nx, struct nx_node *n, const char *name, size_t nlen,
			  const struct fanid *id, bool report);
void nx_fan_dry_point(struct notifyx *nx);

/* fanotify-fs.c: reading the kernel queue, filesystem marks */
ssize_t nx_fan_read(struct fan *fa, size_t size);
bool nx_fan_read_ahead(struct fan *fa);
/* The number of the record at pos in buf (pos at or after seq_at), and of
 * those after buf's last one, queued in the kernel: the first of a repair
 * (struct fwatch's since). */
uint64_t nx_fan_seq(struct fan *fa, size_t pos);
uint64_t nx_fan_seq_next(const struct fan *fa);
/* Node s is of a watch repaired after the record being handled was queued. */
bool nx_fan_stale(const struct fan *fa, const struct nx_node *s);
void nx_fan_consume(struct fan *fa, size_t pos);
bool nx_fan_close_mount_fds(struct fan *fa);
struct fsmark *nx_fan_fsmark_of(const struct fan *fa, const unsigned char *fsid);
int nx_fan_open_id(int mfd, const unsigned char *id, size_t idlen);
int nx_fan_open_handle(struct fan *fa, struct fsmark *fm, const unsigned char *id,
		       size_t idlen);
struct kobj *nx_fan_kobj_get(struct notifyx *nx, const struct fanid *id);
void nx_fan_fs_unmark(struct notifyx *nx, struct fwatch *fw);
int nx_fan_fs_add_watch(struct notifyx *nx, struct nx_watch *w, int fd);
bool nx_fan_fs_above(struct notifyx *nx, const struct nx_node *n, const struct fanid *id);
struct nx_node *nx_fan_node_by_id(struct notifyx *nx, struct nx_node *parent, const char *name,
				  size_t len, const struct fanid *id);

/* fanotify-event.c: dispatching, held roots, reading */
size_t nx_fan_subscribers(struct notifyx *nx, const struct kobj *k, int i);
int nx_fan_hold_root(struct notifyx *nx, struct nx_watch *w, int fd);
void nx_fan_guard_root(struct notifyx *nx, struct nx_watch *w);
int nx_fan_process(struct notifyx *nx, unsigned flags);

/* fanotify-move.c: moves, mounts */
bool nx_fan_same_id(const struct fanid *a, const struct fanid *b);
size_t nx_fan_rename_event(struct notifyx *nx, size_t pos, const struct fanrec *r);
void nx_fan_check_mounts(struct notifyx *nx);

/* fanotify-repair.c: the mark policy, setting up, repair */
long nx_fan_default_inode_max(void);
void nx_fan_free_fwatch(struct notifyx *nx, struct nx_watch *w);
int nx_fan_add_watch(struct notifyx *nx, struct nx_watch *w);
void nx_fan_rm_watch(struct notifyx *nx, struct nx_watch *w);
int nx_fan_repair(struct notifyx *nx, struct nx_watch *w);

#endif
