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
	struct nx_node *subs; /* nodes of this inode, linked by knext */
	bool isdir;
	size_t idlen;
	unsigned char id[ID_MAX];
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
	char *root;           /* the root's canonical path (as /proc/self/fd says) */
	size_t root_len;
	struct fsmark **marks; /* filesystems it marked */
	uint64_t *mnts;       /* and their mount ids */
	size_t nmarks;
};

/* A FAN_RENAME of a directory not handled yet: in buf at pos. */
struct pending {
	size_t pos;
	uint64_t key;         /* the directory's */
};

struct fan {
	int fd;
	int fsmode;           /* filesystem marks: 1 work, -1 refused (no privilege), 0 untried */
	long inode_max;       /* recursive trees of at most this many directories: inode marks */
	unsigned nfswatches;  /* watches in fsmode */
	uint64_t fsgen;       /* changes of the set of fsmode watches */
	uint64_t epoch;       /* since 1, one more at each dry point and watch added */
	size_t next;          /* in buf: where the records not handled yet start */
	const struct fanid *cur_fid; /* the object of the record being handled, or NULL */
	struct nx_map fsmarks; /* fsid key -> struct fsmark */
	struct nx_map outside; /* keys of directories found outside every fsmode tree */
	int mnt_wake;         /* /proc/self/mountinfo in the epoll set: wakes the application */
	int mnt_check;        /* a private one: polled by process() itself */
	uint32_t cookie;
	struct nx_map kobjs;  /* key -> struct kobj */
	/* Events already reported or caused by the library itself. */
	struct nx_map suppress;
	struct nx_map listed; /* kobj keys of directories the library listed */
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
	size_t paired;        /* in buf: the second FAN_RENAME of an exchange handled with
				 the first, further on (0: none) */
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
		size_t pos, after;
	} *late;
	size_t nlate, late_cap;
};

static inline struct fan *fan_of(const struct notifyx *nx)
{
	return nx->bdata;
}

#endif
